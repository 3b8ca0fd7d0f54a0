package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
	"github.com/lockd/lockd/test/proccluster"
)

// checkDurability is checker 5. After the workloads stopped, one session
// with a long TTL takes every lock and election the run was acknowledged a
// grant on, and every lock of the lock workload (waiting out any holder
// left behind), and releases the first lock again; every acknowledged step
// is remembered, together with the highest token any client was ever
// acknowledged. Then every node is killed with SIGKILL and restarted, and
// each name must read exactly as acknowledged (which also shows that the
// session survived), and the cluster's applied index must cover every
// acknowledged token.
//
// Sessions kept alive up to the kill must survive too (see takeSurvivors);
// survived is how many were checked after the restart.
func checkDurability(ctx context.Context, c *proccluster.Cluster, bin string, rec *history.Recorder) (v validate.Verdict, survived int) {
	v = validate.Verdict{Checker: validate.Durability}
	undecided := func(format string, args ...any) (validate.Verdict, int) {
		v.Undecided = fmt.Sprintf(format, args...)
		return v, 0
	}
	var maxToken uint64
	for _, op := range rec.Ops() {
		if op.Kind == history.Acquire && op.Status == history.OK {
			maxToken = max(maxToken, op.Token)
		}
	}
	cl, err := adminAccess(c).Client(client.Config{Endpoints: c.Endpoints(), RequestTimeout: 2 * time.Second})
	if err != nil {
		return undecided("%v", err)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	s, err := client.NewSession(sctx, cl, client.WithTTL(60*time.Second), client.WithLockDelay(0), client.WithName("durability"))
	cancel()
	if err != nil {
		return undecided("no durability session: %v", err)
	}
	defer s.Close()
	want := durableNames(rec.Ops())
	for i := range want {
		d := &want[i]
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		if d.Election {
			e := client.NewElection(s, d.Name)
			err = e.Campaign(lctx, durableValue)
			d.Token = e.Token()
		} else {
			m := client.NewMutex(s, d.Name)
			err = m.Lock(lctx)
			d.Token = m.Token()
			if err == nil && i == 0 {
				uctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err = m.Unlock(uctx)
				cancel()
				d.Token = 0
			}
		}
		cancel()
		if err != nil {
			return undecided("final grant or release of %s: %v", d.Name, err)
		}
		maxToken = max(maxToken, d.Token)
	}
	survivors, err := takeSurvivors(ctx, c)
	if err != nil {
		return undecided("sessions to survive the restart: %v", err)
	}
	for _, sv := range survivors {
		maxToken = max(maxToken, sv.Token)
	}
	keys, err := durableKeys(ctx, cl)
	if err != nil {
		return undecided("keys before the restart: %v", err)
	}
	rec.Eventf("durability: acknowledged %v, %d keys under %s and %d sessions holding %s*, highest acknowledged token %d; kill -9 every node",
		want, len(keys), traffic.KVPrefix, len(survivors), survivorLock, maxToken)
	for _, n := range c.Nodes {
		n.Kill()
	}
	for _, n := range c.Nodes {
		if err := n.Start(bin); err != nil {
			return undecided("restart %s: %v", n.ID, err)
		}
	}
	if _, err := c.WaitLeader(ctx, 30*time.Second); err != nil {
		return undecided("after restart: %v", err)
	}
	back := time.Now()
	rec.Eventf("durability: every node restarted")
	got := map[string]durableName{}
	for _, d := range want {
		rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		r := durableName{Name: d.Name, Election: d.Election}
		if d.Election {
			var l client.Leader
			l, err = cl.Election(rctx, d.Name)
			if errors.Is(err, client.ErrNoElectionLeader) {
				err = nil
			}
			if l.Session == s.ID() {
				r.Token, r.Value = l.Token, l.Value
			}
			r.Seen = fmt.Sprintf("leader %s token %d", l.Session, l.Token)
		} else {
			var lk api.Lock
			lk, err = cl.Lock(rctx, d.Name, client.Consistent)
			r.Token = holderToken(lk, s.ID())
			r.Seen = fmt.Sprintf("holders %v", lk.Holders)
		}
		cancel()
		if err != nil {
			return undecided("read %s after restart: %v", d.Name, err)
		}
		got[d.Name] = r
	}
	for _, msg := range compareDurable(want, got) {
		v.Violations++
		v.Details = append(v.Details, msg)
	}
	keysAfter, err := durableKeys(ctx, cl)
	if err != nil {
		return undecided("keys after the restart: %v", err)
	}
	for _, msg := range compareKeys(keys, keysAfter) {
		v.Violations++
		v.Details = append(v.Details, msg)
	}
	seen, err := seeSurvivors(ctx, c, survivors, back)
	if err != nil {
		return undecided("sessions after the restart: %v", err)
	}
	for _, msg := range compareSurvivors(survivors, seen) {
		v.Violations++
		v.Details = append(v.Details, msg)
	}
	v.Details = append(v.Details, fmt.Sprintf("%d sessions alive before the restart checked %v after the cluster was back (TTL %v)",
		len(survivors), survivorCheck, survivorTTL))
	v.Cover(len(want)+len(survivors)+len(keys), "names, sessions and keys", "%d locks and elections, %d sessions and %d keys compared across kill -9 and restart of every node",
		len(want), len(survivors), len(keys))
	var st api.Cluster
	for _, n := range c.Nodes {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err = n.Status(rctx)
		cancel()
		if err == nil && st.State == "Leader" {
			break
		}
	}
	if st.AppliedIndex < maxToken {
		v.Violations++
		v.Details = append(v.Details, fmt.Sprintf("applied index %d after restart is below acknowledged token %d", st.AppliedIndex, maxToken))
	}
	v.Details = append(v.Details, fmt.Sprintf("%d locks and elections compared, highest acknowledged token %d", len(want), maxToken))
	return v, len(survivors)
}

// durableValue is the value the durability session campaigns with.
const durableValue = "durability"

// durableName is a lock or an election the durability check compares: the
// durability session's token on it (0: not held by it) and, for an
// election, its value.
type durableName struct {
	Name     string
	Election bool
	Token    uint64
	Value    string
	Seen     string // what a read after the restart showed, for the report
}

func (d durableName) String() string {
	if d.Election {
		return fmt.Sprintf("election %s:%d", d.Name, d.Token)
	}
	return fmt.Sprintf("%s:%d", d.Name, d.Token)
}

// durableNames returns the names the durability check takes: the lock
// workload's locks first (the first is given back again, so that a release
// is compared too), then every other lock and election a grant was
// acknowledged on in ops, in name order. Elections are the workload's
// election names.
func durableNames(ops []history.Op) []durableName {
	var out []durableName
	seen := map[string]bool{}
	for _, l := range traffic.LockNames {
		seen[l] = true
		out = append(out, durableName{Name: l})
	}
	var more []string
	for _, op := range ops {
		// The etcd workload's names are keys of etcd's recipes, not
		// lockd locks: its client's leases end with the run.
		if op.Kind == history.Acquire && op.Status == history.OK && !seen[op.Lock] && !traffic.IsEtcdName(op.Lock) {
			seen[op.Lock] = true
			more = append(more, op.Lock)
		}
	}
	sort.Strings(more)
	for _, n := range more {
		out = append(out, durableName{Name: n, Election: n == traffic.ElectionName})
	}
	return out
}

// compareDurable compares what the durability session was acknowledged
// before the restart with what it reads after, name by name, and returns
// one message per difference. A name got lacks reads as not held.
func compareDurable(want []durableName, got map[string]durableName) []string {
	var out []string
	for _, w := range want {
		g := got[w.Name]
		kind := "lock"
		if w.Election {
			kind = "election"
		}
		switch {
		case g.Token != w.Token:
			out = append(out, fmt.Sprintf("%s %s after restart: durability session holds token %d, acknowledged %d (%s)",
				kind, w.Name, g.Token, w.Token, g.Seen))
		case w.Election && w.Token != 0 && g.Value != durableValue:
			out = append(out, fmt.Sprintf("election %s after restart: value %q, acknowledged %q", w.Name, g.Value, durableValue))
		}
	}
	return out
}

func holderToken(l api.Lock, session string) uint64 {
	for _, h := range l.Holders {
		if h.Session == session {
			return h.Token
		}
	}
	return 0
}

// Sessions that must survive a full restart: alive (just kept alive) when
// every node is killed, each holding a lock of its own. A new leader gives
// every session it inherits a full TTL from when it starts to lead, so
// survivorCheck after the cluster is back each must still exist, still
// hold its lock, and accept a keepalive.
const (
	survivorCount = 3
	survivorLock  = "jepsen/survive/"
	survivorTTL   = 4 * time.Second
	survivorCheck = 3 * survivorTTL / 4
)

// survivor is a session taken before the restart and its lock's token.
type survivor struct {
	ID    string
	Lock  string
	Token uint64
}

// survivorSeen is what the check saw of a survivor after the restart.
type survivorSeen struct {
	Exists    bool   // the session was listed
	Token     uint64 // its token on its lock (0: not a holder)
	KeptAlive bool   // a keepalive after the check was accepted
	Err       string // why a step failed
}

// takeSurvivors creates the sessions that must survive the restart through
// the leader, has each take its lock, and keeps every one alive once more
// right before it returns.
func takeSurvivors(ctx context.Context, c *proccluster.Cluster) ([]survivor, error) {
	l, err := c.WaitLeader(ctx, 15*time.Second)
	if err != nil {
		return nil, err
	}
	ttl, zero := api.Duration(survivorTTL), api.Duration(0)
	var out []survivor
	for i := range survivorCount {
		var s api.Session
		if err := l.Do(ctx, "POST", "/v1/sessions", api.CreateSessionRequest{TTL: ttl, LockDelay: &zero, Name: "survivor"}, &s); err != nil {
			return nil, err
		}
		sv := survivor{ID: s.ID, Lock: fmt.Sprintf("%s%d", survivorLock, i)}
		var r api.AcquireResponse
		if err := l.Do(ctx, "POST", "/v1/locks/"+sv.Lock+"/acquire", api.AcquireRequest{Session: s.ID}, &r); err != nil {
			return nil, err
		}
		sv.Token = r.Token
		out = append(out, sv)
	}
	for _, sv := range out {
		if err := l.Do(ctx, "POST", "/v1/sessions/"+sv.ID+"/keepalive", nil, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// seeSurvivors waits until survivorCheck after back, then reads the
// sessions and their locks through the leader and keeps each alive once.
func seeSurvivors(ctx context.Context, c *proccluster.Cluster, survivors []survivor, back time.Time) ([]survivorSeen, error) {
	select {
	case <-time.After(time.Until(back.Add(survivorCheck))):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	l, err := c.WaitLeader(ctx, 5*time.Second)
	if err != nil {
		return nil, err
	}
	sessions, err := allSessions(ctx, l)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, s := range sessions {
		live[s.ID] = true
	}
	out := make([]survivorSeen, len(survivors))
	for i, sv := range survivors {
		out[i].Exists = live[sv.ID]
		var lk api.Lock
		if err := l.Do(ctx, "GET", "/v1/locks/"+sv.Lock+"?consistent", nil, &lk); err != nil {
			out[i].Err = err.Error()
		}
		out[i].Token = holderToken(lk, sv.ID)
		if err := keepAliveDefinitely(ctx, c, sv.ID); err != nil {
			out[i].Err = err.Error()
		} else {
			out[i].KeptAlive = true
		}
		_ = l.Do(ctx, "DELETE", "/v1/sessions/"+sv.ID, nil, nil)
	}
	return out, nil
}

// compareSurvivors returns one message per survivor that did not survive
// the restart intact.
func compareSurvivors(want []survivor, seen []survivorSeen) []string {
	var out []string
	for i, w := range want {
		var g survivorSeen
		if i < len(seen) {
			g = seen[i]
		}
		switch {
		case !g.Exists || !g.KeptAlive:
			out = append(out, fmt.Sprintf("session %s, alive before the restart, expired within %v after the cluster was back (listed %v, keepalive accepted %v %s)",
				w.ID, survivorCheck, g.Exists, g.KeptAlive, g.Err))
		case g.Token != w.Token:
			out = append(out, fmt.Sprintf("session %s after restart holds %s with token %d, acknowledged %d", w.ID, w.Lock, g.Token, w.Token))
		}
	}
	return out
}

// keepAliveDefinitely keeps session id alive once, asking again (through
// whichever node leads, for at most keepAliveTries) while the answer says
// nothing about the session: no leader right now, an unknown outcome, a
// connection that failed. Only an accepted keepalive or session_expired
// is an answer; a 503 from a cluster between leaders is not evidence that
// the session is gone (the next leader gives it a full TTL).
func keepAliveDefinitely(ctx context.Context, c *proccluster.Cluster, id string) error {
	var err error
	for try := 0; try < keepAliveTries; try++ {
		if try > 0 {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		var l *proccluster.Node
		if l, err = c.WaitLeader(ctx, time.Second); err != nil {
			continue
		}
		err = l.Do(ctx, "POST", "/v1/sessions/"+id+"/keepalive", nil, nil)
		if definite(err) {
			return err
		}
	}
	return err
}

// keepAliveTries bounds keepAliveDefinitely: about 5 s of asking.
const keepAliveTries = 30

// definite reports whether a keepalive's outcome says whether the session
// lives: accepted, or refused as expired.
func definite(err error) bool {
	return err == nil || api.CodeOf(err) == api.CodeSessionExpired
}

// durableKeys reads every key under traffic.KVPrefix but the ephemeral
// ones (whose sessions may end across the restart), with a consistent
// read: after the workloads stopped, nothing writes them.
func durableKeys(ctx context.Context, cl *client.Client) (map[string]api.KV, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	l, err := cl.KV().List(ctx, traffic.KVPrefix, client.ListOptions{Consistency: client.Consistent})
	if err != nil {
		return nil, err
	}
	out := map[string]api.KV{}
	for _, kv := range l.KVs {
		if !strings.HasPrefix(kv.Key, traffic.KVEphemeralPrefix) {
			out[kv.Key] = kv
		}
	}
	return out, nil
}

// compareKeys says how the keys after the restart differ from before:
// every key, its value and its indexes must be as they were.
func compareKeys(before, after map[string]api.KV) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(before)) {
		b := before[k]
		a, ok := after[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("key %s (modify index %d) missing after the restart", k, b.ModifyIndex))
		case !bytes.Equal(a.Value, b.Value) || a.ModifyIndex != b.ModifyIndex || a.CreateIndex != b.CreateIndex || a.Version != b.Version:
			out = append(out, fmt.Sprintf("key %s was %q @%d (created %d, version %d), is %q @%d (created %d, version %d) after the restart",
				k, b.Value, b.ModifyIndex, b.CreateIndex, b.Version, a.Value, a.ModifyIndex, a.CreateIndex, a.Version))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[k]; !ok {
			out = append(out, fmt.Sprintf("key %s appeared across the restart", k))
		}
	}
	return out
}
