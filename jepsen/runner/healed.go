package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
	"github.com/lockd/lockd/test/proccluster"
)

// lagLock is the lock the stale-lag phase writes and reads.
const lagLock = "jepsen/stale-lag"

// caughtUp waits, at most within, until every running node has applied
// the leader's commit index as it was at the start; it reports whether
// they did.
func caughtUp(ctx context.Context, c *proccluster.Cluster, within time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	l, err := c.WaitLeader(ctx, within)
	if err != nil {
		return false
	}
	st, err := l.Status(ctx)
	if err != nil {
		return false
	}
	for {
		behind := false
		for _, n := range c.Nodes {
			if !n.Alive() {
				continue
			}
			ns, err := n.Status(ctx)
			if err != nil || ns.AppliedIndex < st.CommitIndex {
				behind = true
			}
		}
		if !behind {
			return true
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return false
		}
	}
}

// staleLagPhase gives the stale-reads checker its lag evidence once the
// cluster is healed and every node caught up: a session takes and gives
// back lagLock, a ?consistent read acknowledges the lock's index (an Ack),
// and validate.StaleLag later every node is asked with ?stale reads. It
// returns a note for the report.
func staleLagPhase(ctx context.Context, c *proccluster.Cluster, rec *history.Recorder) string {
	if !caughtUp(ctx, c, 15*time.Second) {
		return "stale lag: the nodes did not catch up within 15s after healing; lag not checked"
	}
	cl, err := adminAccess(c).Client(client.Config{Endpoints: c.Endpoints(), RequestTimeout: 2 * time.Second})
	if err != nil {
		return "stale lag: " + err.Error()
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := client.NewSession(sctx, cl, client.WithTTL(10*time.Second), client.WithLockDelay(0), client.WithName("stale-lag"))
	if err != nil {
		return "stale lag: no session: " + err.Error()
	}
	m := client.NewMutex(s, lagLock)
	err = m.Lock(sctx)
	if err == nil {
		err = m.Unlock(sctx)
	}
	var lk api.Lock
	if err == nil {
		lk, err = cl.Lock(sctx, lagLock, client.Consistent)
	}
	at := rec.Now()
	s.Close()
	if err != nil {
		return "stale lag: write or read of " + lagLock + ": " + err.Error()
	}
	rec.AddAck(history.Ack{Lock: lagLock, Index: lk.ModifyIndex, Return: at})
	if !sleepCtx(ctx, validate.StaleLag) {
		return "stale lag: cut short"
	}
	read := 0
	for _, n := range c.Nodes {
		if !n.Alive() {
			continue
		}
		nc, err := adminAccess(c).Client(client.Config{Endpoints: []string{n.HTTP}, RequestTimeout: time.Second})
		if err != nil {
			continue
		}
		for range 3 {
			if r, ok := traffic.StaleRead(ctx, rec, nc, n.ID, n.PID, lagLock); ok {
				rec.AddStaleRead(r)
				read++
			}
		}
	}
	return fmt.Sprintf("stale lag: index %d of %s acknowledged; %d stale reads %v later", lk.ModifyIndex, lagLock, read, validate.StaleLag)
}

// quietSessions is how many sessions keep alive through the quiet window.
const quietSessions = 4

// quietWindow holds a window in which nothing runs but keepalives: once the
// workloads' sessions are gone and no lock has a pending delay or waiter,
// quietSessions sessions are kept alive by raw keepalives to the leader
// for quietFor while the leader's commit index is sampled.
func quietWindow(ctx context.Context, c *proccluster.Cluster, rec *history.Recorder) validate.QuietWindow {
	const quietFor, every = 3 * time.Second, 100 * time.Millisecond
	var w validate.QuietWindow
	l, err := c.WaitLeader(ctx, 15*time.Second)
	if err != nil {
		w.Skipped = "no leader: " + err.Error()
		return w
	}
	ttl := api.Duration(5 * time.Second)
	zero := api.Duration(0)
	ours := map[string]bool{}
	for range quietSessions {
		var s api.Session
		if err := l.Do(ctx, "POST", "/v1/sessions", api.CreateSessionRequest{TTL: ttl, LockDelay: &zero, Name: "quiet"}, &s); err != nil {
			w.Skipped = "create a quiet session: " + err.Error()
			return w
		}
		ours[s.ID] = true
	}
	defer func() {
		for id := range ours {
			_ = l.Do(context.WithoutCancel(ctx), "DELETE", "/v1/sessions/"+id, nil, nil)
		}
	}()
	keepalive := func() int {
		ok := 0
		for id := range ours {
			if l.Do(ctx, "POST", "/v1/sessions/"+id+"/keepalive", nil, nil) == nil {
				ok++
			}
		}
		return ok
	}
	// Wait for quiet: the other sessions destroyed or expired, no lock in
	// lock-delay or with waiters (their timers write when they end).
	deadline := time.Now().Add(20 * time.Second)
	for quiet := false; !quiet; {
		if time.Now().After(deadline) {
			w.Skipped = "the cluster did not become quiet within 20s"
			return w
		}
		keepalive()
		ss, errS := allSessions(ctx, l)
		ll, errL := allLocks(ctx, l)
		quiet = errS == nil && errL == nil
		for _, s := range ss {
			quiet = quiet && ours[s.ID]
		}
		for _, lk := range ll {
			quiet = quiet && lk.DelayUntil == nil && len(lk.Waiters) == 0
		}
		if !quiet && !sleepCtx(ctx, 200*time.Millisecond) {
			w.Skipped = "cut short"
			return w
		}
	}
	rec.Eventf("quiet window: only %d sessions' keepalives for %v", quietSessions, quietFor)
	end := time.Now().Add(quietFor)
	for time.Now().Before(end) {
		at := rec.Now()
		st, err := l.Status(ctx)
		if err != nil || st.State != "Leader" {
			w.Skipped = fmt.Sprintf("%s stopped answering as leader in the quiet window (%v)", l.ID, err)
			return w
		}
		w.Samples = append(w.Samples, validate.QuietSample{At: at, Leader: l.ID, Term: st.Term, Commit: st.CommitIndex})
		// A request the workloads sent before they stopped can still land
		// (its outcome was unknown to its client): a session that is not
		// the window's own appearing in it writes entries that are not
		// keepalives', so the window proves nothing either way.
		if ss, err := allSessions(ctx, l); err == nil {
			for _, s := range ss {
				if !ours[s.ID] {
					w.Skipped = fmt.Sprintf("session %s (%q) appeared in the quiet window: a request sent before the workloads stopped landed late", s.ID, s.Name)
					return w
				}
			}
		}
		w.Keepalives += keepalive()
		if !sleepCtx(ctx, every) {
			break
		}
	}
	w.Sessions = quietSessions
	return w
}

// sleepCtx waits d or until ctx ends; it reports whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
