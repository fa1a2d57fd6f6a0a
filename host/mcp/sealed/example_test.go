package sealed_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/plughost/plughost/host/mcp/sealed"
)

// Two replicas read the same secret; what one seals, the other opens. The
// client in between sees only an opaque string, and cannot reuse it for
// another purpose.
func Example() {
	secret := []byte("the same 32 or more bytes on every replica")
	replicaA, err := sealed.New(secret)
	if err != nil {
		panic(err)
	}
	replicaB, err := sealed.New(secret)
	if err != nil {
		panic(err)
	}

	state, err := replicaA.Seal("tools/call", []byte(`{"round":1}`), 15*time.Minute)
	if err != nil {
		panic(err)
	}
	fmt.Println(state[:3], len(state) <= sealed.MaxSealed)

	payload, err := replicaB.Open("tools/call", state)
	fmt.Printf("%s %v\n", payload, err)

	_, err = replicaB.Open("prompts/get", state)
	fmt.Println(errors.Is(err, sealed.ErrTampered))

	_, err = sealed.NewRandom().Open("tools/call", state)
	fmt.Println(errors.Is(err, sealed.ErrTampered))
	// Output:
	// v1. true
	// {"round":1} <nil>
	// true
	// true
}
