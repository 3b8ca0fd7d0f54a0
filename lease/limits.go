package lease

import (
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// Limits on what one token, session or object may make the cluster keep
// (Config.MaxSessionsPerToken, MaxObjectsPerSession, MaxWaitersPerObject).
// They are read from the state this leader has applied, before the entry
// is proposed, and refused without an entry; the state machine does not
// know them, so raising a limit needs no new log format.

// checkSessionLimit refuses a session for owner past its limit.
func (n *Node) checkSessionLimit(owner string) error {
	if owner == "" {
		return nil
	}
	if got := n.fsm.OwnedSessions(owner); got >= n.cfg.MaxSessionsPerToken {
		return api.Errorf(api.CodeTooMany, "token %s has %d sessions, the most a token may have; destroy some first", owner, got)
	}
	return nil
}

// checkAcquireLimits refuses an acquire or campaign that would make the
// session hold or wait for more objects than its limit, or queue one more
// waiter on an object that has as many as its limit. A request for an
// object the session already holds or waits for is never refused here: it
// is a repeat, and adds nothing.
func (n *Node) checkAcquireLimits(election bool, cmd fsm.Command) error {
	if _, held, queued := n.fsm.Standing(election, cmd.Name, cmd.Session); held || queued {
		return nil
	}
	objects, waiters := n.fsm.Usage(cmd.Session, election, cmd.Name)
	switch {
	case objects >= n.cfg.MaxObjectsPerSession:
		return api.Errorf(api.CodeTooMany, "session %s holds or waits for %d locks and elections, the most a session may; release some first", cmd.Session, objects)
	case cmd.Wait > 0 && waiters >= n.cfg.MaxWaitersPerObject:
		return api.Errorf(api.CodeTooMany, "%d sessions wait for %q, the most one object may have; retry later", waiters, cmd.Name)
	}
	return nil
}
