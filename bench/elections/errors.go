package elections

import "errors"

// The errors of package bench.
var (
	// ErrInvalidConfig: a Config, or a list given to ParseNs or
	// ParseAlgorithms, breaks a bound; the message names it.
	ErrInvalidConfig = errors.New("bench: invalid config")
	// ErrNotSettled: a classic scenario did not reach agreement within
	// its virtual time limit. It is a bug in the algorithm or in the
	// scenario, never a matter of load.
	ErrNotSettled = errors.New("bench: election did not settle")
	// ErrNoLeader: a Raft cluster did not elect a leader and commit an
	// entry within its wall-clock limit (an overloaded machine, or a bug).
	ErrNoLeader = errors.New("bench: no raft leader")
)
