package lease

import "time"

// PromiseFor exposes a node's answer to the lease exchange to the external
// tests of this package.
func (n *Node) PromiseFor(term uint64, leader string) time.Duration {
	return n.raft.promise(term, leader)
}

// WallStepped is wallStepped (liveness_test.go), for the external tests.
var WallStepped = wallStepped

// SetLivenessClock makes now the clock n's liveness decisions read
// (liveness.go) in place of time.Now.
func SetLivenessClock(n *Node, now func() time.Time) {
	n.raft.liveClock.Store(&now)
}

// APMember is what the voter-set maintenance sees of one member.
type APMember = apMember

// AutopilotView returns a function that, at each call, builds what n's
// voter-set maintenance sees of the members now (apView), remembering
// between calls what the maintenance's loop remembers between ticks.
func AutopilotView(n *Node) func() ([]APMember, error) {
	e := n.raft
	seen, start := map[string]*apHealth{}, e.liveNow()
	return func() ([]APMember, error) {
		f := e.raft.GetConfiguration()
		if err := f.Error(); err != nil {
			return nil, err
		}
		return e.apView(f.Configuration().Servers, seen, start, e.liveNow()), nil
	}
}
