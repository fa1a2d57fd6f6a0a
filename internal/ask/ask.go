// Package ask asks a person, once, for the values a server needs when it
// is installed: `plughost install` asks for a registry entry's required
// arguments and variables, and for a bundle's user_config.
//
// A value comes from the first of: --set KEY=VALUE on the command line
// (never for a secret: a command line is seen by every user of the
// machine and kept in shell histories), --secret-file KEY=PATH for a
// secret (the file's first line), and the person at the terminal: a
// question on Out, an answer read from In (a secret without echo when In
// is a terminal). Without a terminal (a script, a test) answers are read
// from In line by line, in the order asked, so a script can pipe them.
//
//	a := ask.New(os.Stdin, os.Stdout, sets, secretFiles)
//	v, err := a.Ask(ask.Question{Key: "API_KEY", Description: "Airtable token", Required: true, Secret: true})
package ask

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/term"
)

// MaxAnswer bounds one answer read from In or from a secret file.
const MaxAnswer = 64 << 10

// Question is one value to ask for.
type Question struct {
	// Key names the value: a variable, an argument, a user_config key.
	Key string
	// Title and Description say what it is for, as the server says it.
	Title, Description string
	// Required: an empty answer is refused when there is no Default.
	Required bool
	// Secret: never from --set, never echoed, never printed back.
	Secret bool
	// Default is taken for an empty answer.
	Default string
	// Choices, when set, are the only answers accepted.
	Choices []string
}

// Asker asks Questions; each key is asked at most once.
type Asker struct {
	in      *bufio.Reader
	inFile  *os.File // In, when it is a terminal
	out     io.Writer
	sets    map[string]string
	secrets map[string]string // key → file
	asked   map[string]string
}

// New returns an Asker reading answers from in and writing questions to
// out; sets are the --set values, secretFiles the --secret-file ones.
func New(in io.Reader, out io.Writer, sets, secretFiles map[string]string) *Asker {
	a := &Asker{in: bufio.NewReader(in), out: out, sets: sets, secrets: secretFiles, asked: map[string]string{}}
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		a.inFile = f
	}
	return a
}

// ErrNoAnswer is Ask's error for a required value nobody gave.
var ErrNoAnswer = errors.New("no answer")

// Ask returns the value of q, asking for it when no flag gave it.
func (a *Asker) Ask(q Question) (string, error) {
	if v, ok := a.asked[q.Key]; ok {
		return v, nil
	}
	v, err := a.answer(q)
	if err != nil {
		return "", err
	}
	if v == "" {
		v = q.Default
	}
	if v == "" && q.Required {
		return "", fmt.Errorf("%s is required: %w (%s)", q.Key, ErrNoAnswer, a.how(q))
	}
	if v != "" && len(q.Choices) > 0 && !slices.Contains(q.Choices, v) {
		return "", fmt.Errorf("%s: %q is not one of %s", q.Key, v, strings.Join(q.Choices, ", "))
	}
	a.asked[q.Key] = v
	return v, nil
}

func (a *Asker) how(q Question) string {
	if q.Secret {
		return "answer at the prompt, or pass --secret-file " + q.Key + "=FILE"
	}
	return "answer at the prompt, or pass --set " + q.Key + "=VALUE"
}

func (a *Asker) answer(q Question) (string, error) {
	if v, ok := a.sets[q.Key]; ok {
		if q.Secret {
			return "", fmt.Errorf("%s is a secret: not on the command line (--set), where other users and your shell's history see it; answer at the prompt or pass --secret-file %s=FILE", q.Key, q.Key)
		}
		return v, nil
	}
	if path, ok := a.secrets[q.Key]; ok {
		return readFirstLine(path)
	}
	fmt.Fprintf(a.out, "%s", q.Key)
	if q.Title != "" {
		fmt.Fprintf(a.out, " (%s)", q.Title)
	}
	if q.Description != "" {
		fmt.Fprintf(a.out, ": %s", q.Description)
	}
	if len(q.Choices) > 0 {
		fmt.Fprintf(a.out, " [%s]", strings.Join(q.Choices, "|"))
	}
	if q.Default != "" && !q.Secret {
		fmt.Fprintf(a.out, " (default %s)", q.Default)
	}
	switch {
	case q.Secret:
		fmt.Fprint(a.out, " (secret, not echoed)")
	case !q.Required:
		fmt.Fprint(a.out, " (optional)")
	}
	fmt.Fprint(a.out, ": ")
	if q.Secret && a.inFile != nil {
		b, err := term.ReadPassword(int(a.inFile.Fd()))
		fmt.Fprintln(a.out)
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(b)), nil
	}
	line, err := readLine(a.in)
	if a.inFile == nil {
		fmt.Fprintln(a.out) // the answer came from a pipe: end the question's line
	}
	if errors.Is(err, io.EOF) && line == "" {
		return "", nil // no more answers: the default, or "required"
	}
	return line, err
}

// readLine reads one line of at most MaxAnswer bytes.
func readLine(r *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		chunk, isPrefix, err := r.ReadLine()
		b.Write(chunk)
		if b.Len() > MaxAnswer {
			return "", fmt.Errorf("an answer over %d bytes", MaxAnswer)
		}
		if err != nil || !isPrefix {
			return strings.TrimSpace(b.String()), err
		}
	}
}

// readFirstLine is the first line of the file at path, for --secret-file.
func readFirstLine(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := readLine(bufio.NewReader(io.LimitReader(f, MaxAnswer+1)))
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return line, nil
}
