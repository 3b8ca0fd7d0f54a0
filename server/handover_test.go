package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/mux"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

// serving reports whether s would answer a default read itself, under its
// master lease: it leads, and the lease holds.
func serving(s *server.Server) bool {
	ok, _ := s.Node().Leader()
	return ok && s.Node().Ready(context.Background()) == nil
}

// TestCluster_LeaderRemovingItselfStopsServingFirst removes the leader
// from the cluster while one follower cannot hear it, so that the new
// configuration (without the leader) stays uncommitted and the leader keeps
// leading for a while. From the moment Raft holds that configuration, the
// leader must serve nothing under its master lease: the remaining members
// no longer count it, and its lease must not outlive its membership.
func TestCluster_LeaderRemovingItselfStopsServingFirst(t *testing.T) {
	c := servertest.New(t, 3)
	leader := c.WaitLeader()
	s := c.Nodes[leader]
	r := s.Node().Raft()
	deaf := c.Nodes[c.Follower(leader)]
	if !serving(s) {
		t.Fatal("the leader does not serve before the removal")
	}
	s.Faults().Set(deaf.ID(), mux.Out, mux.Drop)
	t.Cleanup(func() { s.Faults().HealAll() })

	done := make(chan error, 1)
	go func() { done <- s.Node().RemoveMember(context.Background(), s.ID()) }()
	pending, violations := 0, 0
	var first time.Time
	timeout := time.After(10 * time.Second)
loop:
	for {
		select {
		case err := <-done:
			t.Logf("RemoveMember of the leader itself: %v", err)
			break loop
		case <-timeout:
			t.Fatal("RemoveMember did not return within 10s")
		default:
		}
		f := r.GetConfiguration()
		if f.Error() != nil {
			time.Sleep(time.Millisecond)
			continue
		}
		if !hasServer(f.Configuration(), s.ID()) {
			// Read after the configuration: a lease given up before the
			// removal started is visible here.
			if pending++; serving(s) {
				if violations++; violations == 1 {
					first = time.Now()
				}
			}
		}
		time.Sleep(time.Millisecond)
	}
	if pending == 0 {
		t.Fatal("never saw the removal pending: the check did not run")
	}
	if violations > 0 {
		t.Fatalf("the leader served under its master lease at %d of %d samples taken while its own removal was pending (first at %v)",
			violations, pending, first.Format("15:04:05.000"))
	}
	t.Logf("%d samples while the removal was pending, none serving", pending)
}

func hasServer(c raft.Configuration, id string) bool {
	for _, s := range c.Servers {
		if string(s.ID) == id {
			return true
		}
	}
	return false
}

// TestCluster_GracefulHandoverNoReadAfterNewLeaderWrote stops the leader
// gracefully while nothing reaches it from the followers (its incoming
// traffic is blackholed): it still sends the transfer request, the target
// wins an election at once, but the old leader hears neither the vote
// request nor the new leader's heartbeats, so Raft does not make it step
// down before LeaderLeaseTimeout. Once the new leader has acknowledged a
// write, the old one must not serve a read under its lease: it gave the
// lease up when the transfer began.
func TestCluster_GracefulHandoverNoReadAfterNewLeaderWrote(t *testing.T) {
	c := servertest.New(t, 3, func(nc *lease.Config) {
		// Raft's own step-down as late as allowed, and a transfer that
		// does not give up before it: the old leader keeps leading as long
		// as Raft lets it, so only the given-up lease keeps it from serving.
		nc.LeaderLeaseTimeout = nc.HeartbeatTimeout
		nc.ElectionTimeout = 2 * nc.HeartbeatTimeout
	})
	old := c.WaitLeader()
	s := c.Nodes[old]
	l := newAPI(t, c, old)
	sid := l.session(30*time.Second, 0)
	if _, st, _ := l.acquire("h", sid, 0); st != 200 {
		t.Fatalf("acquire: %d", st)
	}
	for i, o := range c.Nodes {
		if i != old {
			s.Faults().Set(o.ID(), mux.In, mux.Blackhole)
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	t.Cleanup(func() { c.Nodes[old] = nil })

	// Find the new leader and have it acknowledge a write.
	var wrote time.Time
	next := -1
	for deadline := time.Now().Add(10 * time.Second); wrote.IsZero(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no other node acknowledged a write within 10s of the handover")
		}
		for i, o := range c.Nodes {
			if i != old && serving(o) {
				next = i
			}
		}
		if next < 0 {
			continue
		}
		d := api.Duration(0)
		var created api.Session
		if st, _ := newAPI(t, c, next).do("POST", "/v1/sessions",
			api.CreateSessionRequest{TTL: api.Duration(10 * time.Second), LockDelay: &d}, &created); st == 201 {
			wrote = time.Now()
		}
	}
	// From now until the old node no longer leads, it must not serve.
	// Once it has left its term it cannot start another: it is closing.
	samples := 0
	r := s.Node().Raft()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the old leader still leads 10s after the handover")
		}
		if ok, _ := s.Node().Leader(); !ok && r.State() != raft.Leader {
			break
		}
		samples++
		if serving(s) {
			t.Fatalf("the old leader serves under its lease %v after the new leader %s acknowledged a write",
				time.Since(wrote), c.Nodes[next].ID())
		}
	}
	if samples == 0 {
		t.Fatal("the old leader had stopped leading before the new one acknowledged a write: the check did not run")
	}
	t.Logf("old leader stopped leading %v after the new leader's write; %d samples, none serving", time.Since(wrote), samples)
	s.Faults().HealAll() // let Close finish without waiting out the transport's timeouts
	select {
	case <-closed: //nolint:errcheck // a leader cut off mid-transfer may report the transfer; this test is about when it stops serving
	case <-time.After(15 * time.Second):
		t.Fatal("Close did not return within 15s")
	}
}
