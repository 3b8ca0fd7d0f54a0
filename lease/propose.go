package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// propose stamps cmd with the leader's wall time (shown, never decided on),
// commits it through Raft and returns the FSM's result. The error is a
// *api.Error: no_leader when the command surely was not and will not be
// applied (not leader, or refused before it was appended), and timeout when
// the outcome is unknown (see raftErr). A refusal by the FSM is not an
// error here: it is in Result.Err, for the caller to translate.
func (n *Node) propose(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	cmd.Now = wallNow(n.clock).UTC()
	data, err := fsm.Encode(cmd)
	if err != nil {
		return fsm.Result{}, err
	}
	type applied struct {
		resp any
		err  error
	}
	done := make(chan applied, 1)
	go func() {
		resp, err := n.eng.apply(data, n.cfg.ApplyTimeout)
		done <- applied{resp, err}
	}()
	timer := time.NewTimer(n.cfg.ApplyTimeout)
	defer timer.Stop()
	var a applied
	select {
	case a = <-done:
	case <-timer.C:
		return fsm.Result{}, errTimeout(fmt.Sprintf("%v was not committed within %v; its outcome is unknown", cmd.Op, n.cfg.ApplyTimeout))
	case <-ctx.Done():
		return fsm.Result{}, errTimeout(fmt.Sprintf("%v: request cancelled before commit; its outcome is unknown", cmd.Op))
	}
	if a.err != nil {
		return fsm.Result{}, a.err
	}
	res, ok := a.resp.(fsm.Result)
	if !ok {
		return fsm.Result{}, fmt.Errorf("lease: unexpected apply response %T", a.resp)
	}
	n.observe(res)
	return res, nil
}

// raftErr translates raft's errors at the package boundary. What matters to
// a client is whether the operation may still take effect: no_leader (503)
// promises that it did not and will not, so a retry cannot apply it twice;
// timeout (504) says the outcome is unknown. Each case below is decided by
// where hashicorp/raft returns the error; anything not named is unknown.
func raftErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		// Answered by a follower or candidate that receives the future, or
		// by a leader that is already stepping down, before the entry is
		// appended to any log: nothing happened.
		return errNoLeader(err.Error())
	case errors.Is(err, raft.ErrLeadershipTransferInProgress):
		// Refused by the leader before the entry is appended, because it
		// is handing leadership over: nothing happened.
		return errNoLeader(err.Error())
	case errors.Is(err, raft.ErrEnqueueTimeout):
		// The future never reached raft's main loop (the leader is
		// overloaded): nothing was appended.
		return errNoLeader("the leader is overloaded, nothing was applied: " + err.Error())
	case errors.Is(err, raft.ErrAbortedByRestore):
		// A restored snapshot replaced the log under an in-flight entry, so
		// it is never applied. lockd does not restore user snapshots; the
		// case is here so that a future use does not turn it into 504.
		return errNoLeader(err.Error())
	case errors.Is(err, raft.ErrLeadershipLost):
		// The entry was appended and possibly replicated when the leader
		// stepped down: a quorum may hold it, and the next leader then
		// commits it.
		return errTimeout("leadership was lost while committing; the outcome is unknown: " + err.Error())
	case errors.Is(err, raft.ErrRaftShutdown):
		// Returned both before the entry is queued and, by the future, for
		// an entry already sent to followers when Raft stops: the two
		// cannot be told apart, so the outcome is unknown.
		return errTimeout("raft shut down while committing; the outcome is unknown: " + err.Error())
	}
	// Anything else (a failed write to the log store, a configuration
	// change refused half-way) may leave the entry on some node's log.
	return errTimeout("commit failed, outcome unknown: " + err.Error())
}

// apiErr translates an FSM refusal into the API's error. what names the
// object for the message ("lock \"a\"").
func (n *Node) apiErr(err error, session, what string) error {
	var delay *fsm.DelayError
	var limit *fsm.LimitError
	var compacted *fsm.CompactedError
	var cas *casError
	var quota *fsm.QuotaError
	kv := strings.HasPrefix(what, kvWhat)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &compacted):
		return &api.CompactedError{Oldest: compacted.Oldest}
	case errors.As(err, &cas) && cas.have == 0:
		return api.Errorf(api.CodeCASFailed, "key %q does not exist, and cas %d asked for its modify index to be %d; nothing was applied", cas.key, cas.want, cas.want)
	case errors.As(err, &cas):
		return api.Errorf(api.CodeCASFailed, "key %q has modify index %d, and cas asked for %d; nothing was applied", cas.key, cas.have, cas.want)
	case errors.As(err, &quota):
		n.count.kvQuota.Add(1)
		return api.Errorf(api.CodeQuotaExceeded, "%s would leave token %s with %d %s, over its max_%s of %d (it has %d now); nothing was applied: delete some of its keys first, or ask for a token with higher limits",
			what, quota.Owner, quota.Would, quotaUnit(quota.Limit), quota.Limit, quota.Max, quota.Used)
	case errors.Is(err, fsm.ErrOwnerNotFound):
		return api.Errorf(api.CodeUnauthorized, "%s was refused: its token was revoked or expired before the write applied; nothing was applied", what)
	case errors.Is(err, fsm.ErrStaleToken):
		return api.Errorf(api.CodeStaleToken, "%s was refused by its guard (%s): the lock was granted since under a higher fencing token; nothing was applied", what, fsmDetail(err, fsm.ErrStaleToken))
	case kv && errors.Is(err, fsm.ErrNotHolder):
		return api.Errorf(api.CodeNotHolder, "%s was refused by its guard (%s): the lock is free or held under other tokens; nothing was applied", what, fsmDetail(err, fsm.ErrNotHolder))
	case kv && errors.Is(err, fsm.ErrRepeated):
		return api.Errorf(api.CodeRepeated, "%s repeats a request of session %q already applied (the same seq for the same first key), so it is not applied again: send a new request", what, session)
	case errors.As(err, &delay):
		n.count.delayRefusals.Add(1)
		left := n.delayRemaining(delay)
		e := api.Errorf(api.CodeLockDelay, "%s is in the lock-delay of an expired holder for about %v more (%v in all; shown end %s)",
			what, left.Round(time.Millisecond), delay.Length, delay.Until.UTC().Format(time.RFC3339Nano))
		e.RetryAfter = left
		return e
	case errors.As(err, &limit):
		return api.Errorf(api.CodeBadRequest, "%s has limit %d while it has holders, waiters or delayed slots, and this acquire asks for %d (0: not a semaphore): every holder and waiter of a lock must ask for the same limit",
			what, limit.Limit, limit.Asked)
	case errors.Is(err, fsm.ErrSessionNotFound):
		return api.Errorf(api.CodeSessionExpired, "session %q does not exist: it expired, was destroyed or never existed", session)
	case errors.Is(err, fsm.ErrStillQueued):
		return api.Errorf(api.CodeLockHeld, "%s is held by another session; session %q stays queued for it (a try without wait does not take its place)", what, session)
	case errors.Is(err, fsm.ErrLockHeld):
		return api.Errorf(api.CodeLockHeld, "%s is held by another session", what)
	case errors.Is(err, fsm.ErrQueuedInOtherMode):
		return api.Errorf(api.CodeLockHeld, "session %q is already queued for %s in the other mode; cancel that wait first", session, what)
	case errors.Is(err, fsm.ErrModeConflict):
		return api.Errorf(api.CodeLockHeld, "%s is already held by session %q in the other mode; release it first", what, session)
	case errors.Is(err, fsm.ErrRepeated):
		return api.Errorf(api.CodeRepeated, "%s is free, but this request repeats one of session %q already applied, so it is not applied again: send a new request", what, session)
	case errors.Is(err, fsm.ErrNotHolder):
		return api.Errorf(api.CodeNotHolder, "session %q does not hold %s", session, what)
	case errors.Is(err, fsm.ErrBadCommand):
		return api.Errorf(api.CodeBadRequest, "%v", err)
	}
	return err
}

// quotaUnit names what a limit of a token counts.
func quotaUnit(limit string) string {
	if limit == "keys" {
		return "keys"
	}
	return "bytes of keys and values"
}

// fsmDetail is the part of an FSM refusal's message after its sentinel's
// ("jobs/a: token 5, held since under a higher one").
func fsmDetail(err, sentinel error) string {
	return strings.TrimPrefix(strings.TrimPrefix(err.Error(), sentinel.Error()), ": ")
}

func errNoLeader(why string) error {
	return &api.Error{Code: api.CodeNoLeader, Message: "no leader can serve this now: " + why, RetryAfter: time.Second}
}

func errTimeout(why string) error {
	return &api.Error{Code: api.CodeTimeout, Message: why}
}
