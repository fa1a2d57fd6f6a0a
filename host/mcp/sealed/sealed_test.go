package sealed

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// maxPayload is the largest payload Seal accepts (MaxSealed's doc).
const maxPayload = 98265

const purpose = "tools/call"

var (
	secretA = bytes.Repeat([]byte("a"), KeySize)
	secretB = bytes.Repeat([]byte("b"), KeySize)
)

func mustNew(t *testing.T, secret []byte) *Sealer {
	t.Helper()
	s, err := New(secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustSeal(t *testing.T, s *Sealer, purpose string, payload []byte) string {
	t.Helper()
	sealed, err := s.Seal(purpose, payload, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return sealed
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		purpose string
		payload []byte
	}{
		"empty":        {purpose, []byte{}},
		"text":         {purpose, []byte(`{"round":1,"state":"opaque"}`)},
		"binary":       {"prompts/get", []byte{0, 1, 2, 0xff, '\n', '"'}},
		"no purpose":   {"", []byte("x")},
		"largest":      {purpose, bytes.Repeat([]byte{0x5a}, maxPayload)},
		"long purpose": {strings.Repeat("p", 1000), []byte("x")},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := mustNew(t, secretA)
			sealed := mustSeal(t, s, c.purpose, c.payload)
			if !strings.HasPrefix(sealed, "v1.") || len(sealed) > MaxSealed {
				t.Errorf("sealed string: prefix %q, length %d; want \"v1.\" and at most %d", sealed[:min(3, len(sealed))], len(sealed), MaxSealed)
			}
			if i := strings.IndexFunc(sealed[3:], func(r rune) bool {
				return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_')
			}); i >= 0 {
				t.Errorf("sealed string has %q at %d: not URL-safe base64 without padding", sealed[3+i], 3+i)
			}
			if len(c.payload) >= 8 && strings.Contains(sealed, string(c.payload)) {
				t.Error("the payload shows in the sealed string")
			}
			got, err := s.Open(c.purpose, sealed)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.payload, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("opened payload (-want +got):\n%s", diff)
			}
		})
	}
}

// Two seals of the same payload differ (a fresh nonce each), and both open.
func TestFreshNonce(t *testing.T) {
	t.Parallel()
	s := mustNew(t, secretA)
	a, b := mustSeal(t, s, purpose, []byte("same")), mustSeal(t, s, purpose, []byte("same"))
	if a == b {
		t.Fatalf("two seals of one payload are equal: %s", a)
	}
	for _, sealed := range []string{a, b} {
		if _, err := s.Open(purpose, sealed); err != nil {
			t.Error(err)
		}
	}
}

func TestRefused(t *testing.T) {
	t.Parallel()
	s := mustNew(t, secretA)
	good := mustSeal(t, s, purpose, []byte("payload"))
	for name, c := range map[string]struct {
		opener  *Sealer
		purpose string
		sealed  string
		want    error
	}{
		"another key":      {mustNew(t, secretB), purpose, good, ErrTampered},
		"random key":       {NewRandom(), purpose, good, ErrTampered},
		"another purpose":  {s, "prompts/get", good, ErrTampered},
		"purpose prefix":   {s, purpose[:len(purpose)-1], good, ErrTampered},
		"purpose extended": {s, purpose + "x", good, ErrTampered},
		"empty":            {s, purpose, "", ErrTampered},
		"prefix only":      {s, purpose, "v1.", ErrTampered},
		"last char cut":    {s, purpose, good[:len(good)-1], ErrTampered},
		"last 4 cut":       {s, purpose, good[:len(good)-4], ErrTampered},
		"half":             {s, purpose, good[:len(good)/2], ErrTampered},
		"head cut":         {s, purpose, "v1." + good[7:], ErrTampered},
		"not base64":       {s, purpose, "v1.not base64!", ErrTampered},
		"padded":           {s, purpose, good + "==", ErrTampered},
		"std alphabet":     {s, purpose, "v1.+/+/" + good[7:], ErrTampered},
		"newline inside":   {s, purpose, good[:10] + "\n" + good[10:], ErrTampered},
		"newline after":    {s, purpose, good + "\r\n", ErrTampered},
		"no version":       {s, purpose, good[3:], ErrTampered},
		"version 2":        {s, purpose, "v2." + good[3:], ErrTampered},
		"upper-case V":     {s, purpose, "V1." + good[3:], ErrTampered},
		"space first":      {s, purpose, " " + good, ErrTampered},
		"appended":         {s, purpose, good + "AAAA", ErrTampered},
		"doubled":          {s, purpose, good + good[3:], ErrTampered},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := c.opener.Open(c.purpose, c.sealed)
			if !errors.Is(err, c.want) || got != nil {
				t.Errorf("Open = %q, %v; want nil, %v", got, err, c.want)
			}
		})
	}
}

// Every single byte changed, in the text or in the bytes it decodes to, is
// refused as tampered: the layout has no byte that is not authenticated.
func TestEveryByteFlipped(t *testing.T) {
	t.Parallel()
	s := mustNew(t, secretA)
	good := mustSeal(t, s, purpose, []byte("a small state"))
	refused := func(t *testing.T, what, sealed string) {
		t.Helper()
		if got, err := s.Open(purpose, sealed); !errors.Is(err, ErrTampered) {
			t.Errorf("%s: Open = %q, %v; want ErrTampered", what, got, err)
		}
	}
	t.Run("text", func(t *testing.T) {
		t.Parallel()
		const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=.+/ \n\x00\xff"
		for i := range len(good) {
			for _, c := range []byte(chars) {
				if c == good[i] {
					continue
				}
				b := []byte(good)
				b[i] = c
				refused(t, fmt.Sprintf("text[%d] = %q", i, c), string(b))
			}
		}
	})
	t.Run("decoded", func(t *testing.T) {
		t.Parallel()
		raw, err := enc.DecodeString(good[len(version):])
		if err != nil {
			t.Fatal(err)
		}
		for i := range raw {
			for _, mask := range []byte{0x01, 0x80, 0xff} {
				b := bytes.Clone(raw)
				b[i] ^= mask
				refused(t, fmt.Sprintf("byte %d ^ %#x", i, mask), version+enc.EncodeToString(b))
			}
		}
	})
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	for name, c := range map[string]struct {
		ttl, later time.Duration
		want       error
	}{
		"at once":          {time.Minute, 0, nil},
		"just before":      {time.Minute, time.Minute - time.Millisecond, nil},
		"at the expiry":    {time.Minute, time.Minute, ErrExpired},
		"long after":       {time.Minute, 24 * time.Hour, ErrExpired},
		"longest ttl":      {1<<63 - 1, 100 * 365 * 24 * time.Hour, nil},
		"clock went back":  {time.Minute, -time.Hour, nil},
		"short ttl, later": {time.Millisecond, time.Millisecond, ErrExpired},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			now := t0
			s := mustNew(t, secretA)
			s.now = func() time.Time { return now }
			sealed, err := s.Seal(purpose, []byte("p"), c.ttl)
			if err != nil {
				t.Fatal(err)
			}
			now = now.Add(c.later)
			got, err := s.Open(purpose, sealed)
			if !errors.Is(err, c.want) {
				t.Fatalf("Open after %v of a %v state: %q, %v; want %v", c.later, c.ttl, got, err, c.want)
			}
			if err == nil && string(got) != "p" {
				t.Errorf("Open = %q, want \"p\"", got)
			}
		})
	}
}

// An expired state that is also altered, or opened with another key, is
// tampered: expiry is checked only after authentication.
func TestExpiredAndTampered(t *testing.T) {
	t.Parallel()
	now := time.Now()
	s := mustNew(t, secretA)
	s.now = func() time.Time { return now }
	sealed := mustSeal(t, s, purpose, []byte("p"))
	now = now.Add(time.Hour)
	other := mustNew(t, secretB)
	other.now = s.now
	b := []byte(sealed)
	b[len(b)/2] ^= 'A' ^ 'B'
	for name, open := range map[string]func() ([]byte, error){
		"altered":         func() ([]byte, error) { return s.Open(purpose, string(b)) },
		"another key":     func() ([]byte, error) { return other.Open(purpose, sealed) },
		"another purpose": func() ([]byte, error) { return s.Open("other", sealed) },
	} {
		if _, err := open(); !errors.Is(err, ErrTampered) {
			t.Errorf("%s, expired: %v, want ErrTampered", name, err)
		}
	}
	if _, err := s.Open(purpose, sealed); !errors.Is(err, ErrExpired) {
		t.Errorf("intact, expired: %v, want ErrExpired", err)
	}
}

func TestTooLarge(t *testing.T) {
	t.Parallel()
	s := mustNew(t, secretA)
	t.Run("open", func(t *testing.T) {
		t.Parallel()
		for name, c := range map[string]struct {
			sealed string
			want   error
		}{
			"garbage over":      {strings.Repeat("!", MaxSealed+1), ErrTooLarge},
			"base64 over":       {"v1." + strings.Repeat("A", MaxSealed), ErrTooLarge},
			"garbage at limit":  {strings.Repeat("!", MaxSealed), ErrTampered},
			"base64 at limit":   {"v1." + strings.Repeat("A", MaxSealed-3), ErrTampered},
			"far over, invalid": {strings.Repeat("\x00", 4*MaxSealed), ErrTooLarge},
		} {
			t.Run(name, func(t *testing.T) {
				if _, err := s.Open(purpose, c.sealed); !errors.Is(err, c.want) {
					t.Errorf("Open(%d bytes) = %v, want %v", len(c.sealed), err, c.want)
				}
			})
		}
	})
	t.Run("seal", func(t *testing.T) {
		t.Parallel()
		for _, n := range []int{maxPayload + 1, 2 * MaxSealed} {
			if sealed, err := s.Seal(purpose, make([]byte, n), time.Minute); !errors.Is(err, ErrTooLarge) || sealed != "" {
				t.Errorf("Seal of %d bytes = %d bytes, %v; want ErrTooLarge", n, len(sealed), err)
			}
		}
		sealed, err := s.Seal(purpose, make([]byte, maxPayload), time.Minute)
		if err != nil || len(sealed) > MaxSealed {
			t.Fatalf("Seal of %d bytes = %d bytes, %v; want at most %d, nil", maxPayload, len(sealed), err, MaxSealed)
		}
	})
}

// Open refuses an oversized string before decoding it: without allocating.
// (Not parallel: AllocsPerRun counts the whole process's allocations.)
func TestOpenOversizedDecodesNothing(t *testing.T) {
	s := mustNew(t, secretA)
	big := "v1." + strings.Repeat("A", 4*MaxSealed)
	if n := testing.AllocsPerRun(10, func() { s.Open(purpose, big) }); n != 0 {
		t.Errorf("Open of an oversized string allocates %v times, want 0 (no decoding)", n)
	}
}

func TestSealBadTTL(t *testing.T) {
	t.Parallel()
	s := mustNew(t, secretA)
	for _, ttl := range []time.Duration{0, -time.Second} {
		if sealed, err := s.Seal(purpose, nil, ttl); err == nil {
			t.Errorf("Seal with ttl %v = %q, want an error", ttl, sealed)
		}
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		secret []byte
		ok     bool
	}{
		"nil":        {nil, false},
		"31 bytes":   {[]byte("s3cr3t-s3cr3t-s3cr3t-s3cr3t-s3c"), false},
		"32 bytes":   {secretA, true},
		"passphrase": {[]byte("correct horse battery staple, and then some more words"), true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := New(c.secret)
			if c.ok {
				if err != nil || s == nil {
					t.Fatalf("New = %v, %v; want a Sealer", s, err)
				}
				return
			}
			if err == nil {
				t.Fatal("New accepted a short secret")
			}
			if !strings.Contains(err.Error(), "32") {
				t.Errorf("error %q does not name the minimum, 32", err)
			}
			if len(c.secret) > 0 && strings.Contains(err.Error(), string(c.secret)) {
				t.Errorf("error %q shows the secret", err)
			}
		})
	}
}

// Replicas given the same secret open each other's states; a Sealer with a
// random key opens only its own.
func TestReplicas(t *testing.T) {
	t.Parallel()
	secret := []byte("a passphrase every replica reads from its key file")
	a, b := mustNew(t, secret), mustNew(t, bytes.Clone(secret))
	for _, c := range []struct {
		name         string
		sealer, open *Sealer
	}{{"a to b", a, b}, {"b to a", b, a}} {
		got, err := c.open.Open(purpose, mustSeal(t, c.sealer, purpose, []byte(c.name)))
		if err != nil || string(got) != c.name {
			t.Errorf("%s: Open = %q, %v; want %q", c.name, got, err, c.name)
		}
	}
	r1, r2 := NewRandom(), NewRandom()
	if _, err := r2.Open(purpose, mustSeal(t, r1, purpose, []byte("x"))); !errors.Is(err, ErrTampered) {
		t.Errorf("another random Sealer opened a state: %v", err)
	}
	if _, err := r1.Open(purpose, mustSeal(t, r1, purpose, []byte("x"))); err != nil {
		t.Errorf("a random Sealer cannot open its own state: %v", err)
	}
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	s := mustNew(t, secretA)
	shared := mustSeal(t, s, purpose, []byte("shared"))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				payload := fmt.Appendf(nil, "goroutine %d, state %d", g, i)
				sealed, err := s.Seal(purpose, payload, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if got, err := s.Open(purpose, sealed); err != nil || !bytes.Equal(got, payload) {
					t.Errorf("Open = %q, %v; want %q", got, err, payload)
					return
				}
				if got, err := s.Open(purpose, shared); err != nil || string(got) != "shared" {
					t.Errorf("Open(shared) = %q, %v", got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
