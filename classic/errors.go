package classic

import "errors"

// Errors returned by the package. Errors that carry detail wrap one of
// these, so test them with errors.Is.
var (
	// ErrInvalidConfig: a Config, Timing or SimConfig names a bound it
	// breaks; the wrapped message says which field and why.
	ErrInvalidConfig = errors.New("classic: invalid config")
	// ErrBadNodeID: a node id does not end in a decimal rank ("n3"), so
	// it has no place in the ring or the bully order.
	ErrBadNodeID = errors.New("classic: node id must end in a decimal rank")
	// ErrUnknownAlgorithm: the name is not ring, bully or invitation.
	ErrUnknownAlgorithm = errors.New("classic: unknown algorithm")
	// ErrUnknownNode: the id is not a member of the cluster.
	ErrUnknownNode = errors.New("classic: unknown node")
	// ErrClosed: the Node or the Transport has been closed.
	ErrClosed = errors.New("classic: closed")
	// ErrStarted: Start was called twice.
	ErrStarted = errors.New("classic: already started")
	// ErrBadFrame: a peer sent a line that is not a message; the
	// connection it came on is closed.
	ErrBadFrame = errors.New("classic: bad frame")
)
