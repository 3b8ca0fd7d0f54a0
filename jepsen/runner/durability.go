package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/httpapi/wire"
	"github.com/lockd/lockd/jepsen/cluster"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
	"github.com/lockd/lockd/jepsen/validate"
)

// checkDurability is checker 5. After the workloads stopped, one session
// with a long TTL takes every lock of the lock workload (waiting out any
// holder left behind) and releases the first again; every acknowledged
// step is remembered, together with the highest token any client was ever
// acknowledged. Then every node is killed with SIGKILL and restarted, and
// each lock must read exactly as acknowledged, and the cluster's applied
// index must cover every acknowledged token.
func checkDurability(ctx context.Context, c *cluster.Cluster, bin string, rec *history.Recorder) validate.Verdict {
	v := validate.Verdict{Checker: validate.Durability}
	undecided := func(format string, args ...any) validate.Verdict {
		v.Undecided = fmt.Sprintf(format, args...)
		return v
	}
	var maxToken uint64
	for _, op := range rec.Ops() {
		if op.Kind == history.Acquire && op.Status == history.OK {
			maxToken = max(maxToken, op.Token)
		}
	}
	cl, err := client.NewWithConfig(client.Config{Endpoints: c.Endpoints(), RequestTimeout: 2 * time.Second})
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
	want := map[string]uint64{} // lock -> token held by s (0: free)
	for i, l := range traffic.LockNames {
		m := client.NewMutex(s, l)
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := m.Lock(lctx)
		cancel()
		if err != nil {
			return undecided("final acquire of %s: %v", l, err)
		}
		want[l] = m.Token()
		maxToken = max(maxToken, m.Token())
		if i == 0 {
			uctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := m.Unlock(uctx)
			cancel()
			if err != nil {
				return undecided("final release of %s: %v", l, err)
			}
			want[l] = 0
		}
	}
	rec.Eventf("durability: acknowledged %v, highest acknowledged token %d; kill -9 every node", want, maxToken)
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
	rec.Eventf("durability: every node restarted")
	for _, l := range traffic.LockNames {
		rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		lk, err := cl.Lock(rctx, l, client.Consistent)
		cancel()
		if err != nil {
			return undecided("read %s after restart: %v", l, err)
		}
		got := holderToken(lk, s.ID())
		if got != want[l] {
			v.Violations++
			v.Details = append(v.Details, fmt.Sprintf("%s after restart: durability session holds token %d, acknowledged %d (holders %v)",
				l, got, want[l], lk.Holders))
		}
	}
	var st wire.Cluster
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
	v.Details = append(v.Details, fmt.Sprintf("%d locks compared, highest acknowledged token %d", len(want), maxToken))
	return v
}

func holderToken(l wire.Lock, session string) uint64 {
	for _, h := range l.Holders {
		if h.Session == session {
			return h.Token
		}
	}
	return 0
}
