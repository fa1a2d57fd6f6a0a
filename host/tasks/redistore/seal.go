package redistore

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
)

// A record in Redis is sealed (issue 31): whoever can write to Redis but
// does not hold the replicas' shared secret (the state key that seals
// requestState) cannot make a replica serve a record of its own making,
// a forged result or elicitation, a result past max_result_size, a record
// copied under another task's id. The value of a task's key is
//
//	"m1." base64url(HMAC-SHA256(key, "plughost task record v1" 0 id 0 record)) "." record
//
// with the record's JSON after the second dot, and the key derived from
// the secret by HKDF-SHA256 (info "plughost task record v1"), so it is
// useless for sealing requestState and the other way round. The task id
// is under the MAC: a record moved to another key fails it. A record that
// fails (edited, sealed with another secret, or written before records
// were sealed) is refused as no record (tasks.ErrNotFound, logged at
// ERROR): never served, never changed.

// MinSecret is the shortest Options.Secret New accepts: 32 bytes, the
// state key's minimum.
const MinSecret = 32

// recordInfo is HKDF's context, and the MAC's first input.
const recordInfo = "plughost task record v1"

// sealPrefix starts every sealed record.
const sealPrefix = "m1."

// macEncoding writes the MAC: 43 characters.
var macEncoding = base64.RawURLEncoding.Strict()

// errUnsealed is why a record is refused: it fails its MAC.
var errUnsealed = errors.New("the record fails its MAC under the replicas' shared key (edited in redis, written by a replica with another state key, or before records were sealed)")

// recordKey derives the MAC key from the replicas' shared secret.
func recordKey(secret []byte) ([]byte, error) {
	if len(secret) < MinSecret {
		return nil, fmt.Errorf("the replicas' shared secret is %d bytes; it must be at least %d", len(secret), MinSecret)
	}
	return hkdf.Key(sha256.New, secret, nil, recordInfo, sha256.Size)
}

// mac is the MAC of the record of task id.
func (s *Store) mac(id string, record []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(recordInfo))
	m.Write([]byte{0})
	m.Write([]byte(id))
	m.Write([]byte{0})
	m.Write(record)
	return m.Sum(nil)
}

// seal returns the value stored for the record of task id.
func (s *Store) seal(id string, record []byte) []byte {
	b := make([]byte, 0, len(sealPrefix)+macEncoding.EncodedLen(sha256.Size)+1+len(record))
	b = append(b, sealPrefix...)
	b = macEncoding.AppendEncode(b, s.mac(id, record))
	b = append(b, '.')
	return append(b, record...)
}

// open returns the record of a value seal made for task id, or
// errUnsealed.
func (s *Store) open(id string, value []byte) ([]byte, error) {
	rest, ok := bytes.CutPrefix(value, []byte(sealPrefix))
	if !ok {
		return nil, errUnsealed
	}
	sum, record, ok := bytes.Cut(rest, []byte{'.'})
	if !ok {
		return nil, errUnsealed
	}
	got, err := macEncoding.DecodeString(string(sum))
	if err != nil || !hmac.Equal(got, s.mac(id, record)) {
		return nil, errUnsealed
	}
	return record, nil
}
