package ask

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAnswersFromAPipeInOrder(t *testing.T) {
	var out strings.Builder
	a := New(strings.NewReader("blue\n\n"), &out, nil, nil)
	v, err := a.Ask(Question{Key: "COLOR", Description: "a colour", Choices: []string{"red", "blue"}, Required: true})
	if err != nil || v != "blue" {
		t.Fatalf("COLOR = %q, %v", v, err)
	}
	v, err = a.Ask(Question{Key: "LEVEL", Default: "info"})
	if err != nil || v != "info" {
		t.Fatalf("LEVEL = %q, %v; want the default for an empty answer", v, err)
	}
	if v, _ := a.Ask(Question{Key: "COLOR"}); v != "blue" {
		t.Fatalf("asked again: %q, want the first answer kept", v)
	}
	if !strings.Contains(out.String(), "COLOR: a colour [red|blue]") || !strings.Contains(out.String(), "(default info)") {
		t.Fatalf("questions printed: %q", out.String())
	}
}

func TestRequiredWithoutAnswer(t *testing.T) {
	a := New(strings.NewReader(""), &strings.Builder{}, nil, nil)
	_, err := a.Ask(Question{Key: "TOKEN", Required: true, Secret: true})
	if !errors.Is(err, ErrNoAnswer) || !strings.Contains(err.Error(), "--secret-file TOKEN=FILE") {
		t.Fatalf("err = %v, want ErrNoAnswer saying how to give it", err)
	}
}

func TestChoiceRefused(t *testing.T) {
	a := New(strings.NewReader("green\n"), &strings.Builder{}, nil, nil)
	if _, err := a.Ask(Question{Key: "COLOR", Choices: []string{"red", "blue"}}); err == nil || !strings.Contains(err.Error(), "not one of red, blue") {
		t.Fatalf("err = %v", err)
	}
}

func TestSecretNeverFromTheCommandLine(t *testing.T) {
	a := New(strings.NewReader(""), &strings.Builder{}, map[string]string{"TOKEN": "s3cret"}, nil)
	_, err := a.Ask(Question{Key: "TOKEN", Secret: true})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "not on the command line") {
		t.Fatalf("err = %v, want a refusal that does not repeat the secret", err)
	}
}

func TestSecretFromAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte("s3cret\nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	a := New(strings.NewReader(""), &out, nil, map[string]string{"TOKEN": path})
	v, err := a.Ask(Question{Key: "TOKEN", Secret: true, Required: true})
	if err != nil || v != "s3cret" {
		t.Fatalf("TOKEN = %q, %v", v, err)
	}
	if out.Len() != 0 {
		t.Fatalf("asked anyway: %q", out.String())
	}
}

func TestAnswerTooLong(t *testing.T) {
	a := New(strings.NewReader(strings.Repeat("x", MaxAnswer+10)+"\n"), &strings.Builder{}, nil, nil)
	if _, err := a.Ask(Question{Key: "X"}); err == nil || !strings.Contains(err.Error(), "over") {
		t.Fatalf("err = %v, want an answer over the bound refused", err)
	}
}
