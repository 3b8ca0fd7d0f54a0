package etcdcompat

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3election/v3electionpb"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3lock/v3lockpb"
	"google.golang.org/grpc/status"
)

// TestLockAndElectionServices runs etcd's Lock and Election services'
// generated clients against a 3-member cluster of each target, beside the
// client's own recipes on the same names.
func TestLockAndElectionServices(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target) {
		cli := newClient(t, tg.Endpoints())
		t.Run("Lock", func(t *testing.T) { testLockService(t, cli) })
		t.Run("LockContended", func(t *testing.T) { testLockContended(t, cli) })
		t.Run("Election", func(t *testing.T) { testElectionService(t, cli) })
	})
}

// grant returns a new lease of ttl seconds.
func grant(ctx context.Context, t *testing.T, cli *clientv3.Client, ttl int64) clientv3.LeaseID {
	t.Helper()
	l, err := cli.Grant(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return l.ID
}

// statusText is the message of a gRPC error.
func statusText(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}

// testLockService: Lock waits for the holder, and a concurrency.Mutex on
// the same name waits for both; the holder's key's create revision fences
// a transaction until Unlock; a Lock whose call ends before the grant
// leaves no key; a Lock without a lease gets one of 60 s.
func testLockService(t *testing.T, cli *clientv3.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	lc := v3lockpb.NewLockClient(cli.ActiveConnection())
	l1, l2 := grant(ctx, t, cli, 30), grant(ctx, t, cli, 30)

	r1, err := lc.Lock(ctx, &v3lockpb.LockRequest{Name: []byte("svc/lock"), Lease: int64(l1)})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("svc/lock/%x", int64(l1)); string(r1.Key) != want {
		t.Fatalf("key %q, want %q (as concurrency.Mutex names it)", r1.Key, want)
	}
	got, err := cli.Get(ctx, string(r1.Key))
	if err != nil || len(got.Kvs) != 1 || got.Kvs[0].Lease != int64(l1) {
		t.Fatalf("the holder's key: %v %v", got, err)
	}
	fence := got.Kvs[0].CreateRevision

	// The client's Mutex on the same name is held off by the service's lock.
	s := newSession(t, cli, 30)
	m := concurrency.NewMutex(s, "svc/lock")
	if err := m.TryLock(ctx); !errors.Is(err, concurrency.ErrLocked) {
		t.Fatalf("Mutex.TryLock beside the Lock service's holder: %v, want ErrLocked", err)
	}

	second := make(chan *v3lockpb.LockResponse, 1)
	go func() {
		r, err := lc.Lock(ctx, &v3lockpb.LockRequest{Name: []byte("svc/lock"), Lease: int64(l2)})
		if err != nil {
			t.Error(err)
		}
		second <- r
	}()
	select {
	case r := <-second:
		t.Fatalf("a second Lock was granted while the first held: %v", r)
	case <-time.After(300 * time.Millisecond):
	}

	// A write fenced by the holder's key: applied while it holds.
	fenced := func(v string) bool {
		tx, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(string(r1.Key)), "=", fence)).
			Then(clientv3.OpPut("svc/config", v)).Commit()
		if err != nil {
			t.Fatal(err)
		}
		return tx.Succeeded
	}
	if !fenced("by the holder") {
		t.Fatal("a write fenced by the holder's key was refused while it held")
	}
	if _, err := lc.Unlock(ctx, &v3lockpb.UnlockRequest{Key: r1.Key}); err != nil {
		t.Fatal(err)
	}
	if fenced("late") {
		t.Fatal("a write fenced by the old holder's key was applied after Unlock")
	}
	var r2 *v3lockpb.LockResponse
	select {
	case r2 = <-second:
	case <-time.After(10 * time.Second):
		t.Fatal("the second Lock was not granted after Unlock")
	}
	if r2 == nil || string(r2.Key) == string(r1.Key) {
		t.Fatalf("second holder's key %v", r2)
	}

	// A Lock whose call ends while it waits leaves no key behind.
	wctx, wcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = lc.Lock(wctx, &v3lockpb.LockRequest{Name: []byte("svc/lock"), Lease: int64(l1)})
	wcancel()
	if err == nil {
		t.Fatal("a Lock was granted while another held the lock")
	}
	waitFor(ctx, t, "the abandoned contender's key is deleted", func() bool {
		g, err := cli.Get(ctx, "svc/lock/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		return err == nil && keys(g.Kvs) == string(r2.Key)
	})
	if _, err := lc.Unlock(ctx, &v3lockpb.UnlockRequest{Key: r2.Key}); err != nil {
		t.Fatal(err)
	}

	// Now the Mutex can take it, and the service waits for the Mutex.
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	third := make(chan error, 1)
	go func() {
		r, err := lc.Lock(ctx, &v3lockpb.LockRequest{Name: []byte("svc/lock")}) // no lease: one of 60 s
		if err == nil {
			ttl, terr := cli.TimeToLive(ctx, leaseOfKey(ctx, t, cli, r.Key))
			if terr != nil || ttl.GrantedTTL != 60 {
				t.Errorf("the lease of a Lock without one: %v %v, want granted TTL 60", ttl, terr)
			}
			_, err = lc.Unlock(ctx, &v3lockpb.UnlockRequest{Key: r.Key})
		}
		third <- err
	}()
	select {
	case err := <-third:
		t.Fatalf("the Lock service granted a lock the Mutex held: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-third; err != nil {
		t.Fatal(err)
	}
}

// leaseOfKey is the lease key is attached to.
func leaseOfKey(ctx context.Context, t *testing.T, cli *clientv3.Client, key []byte) clientv3.LeaseID {
	t.Helper()
	g, err := cli.Get(ctx, string(key))
	if err != nil || len(g.Kvs) != 1 {
		t.Fatalf("get %q: %v %v", key, g, err)
	}
	return clientv3.LeaseID(g.Kvs[0].Lease)
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within the test's time", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// testLockContended: workers take one name in turns, half through the
// Lock service and half through concurrency.Mutex; no two are ever
// inside at once.
func testLockContended(t *testing.T, cli *clientv3.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lc := v3lockpb.NewLockClient(cli.ActiveConnection())
	const workers, rounds = 6, 5
	var inside, entered atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			s, err := concurrency.NewSession(cli, concurrency.WithTTL(30))
			if err != nil {
				t.Error(err)
				return
			}
			defer func() { _ = s.Close() }()
			for range rounds {
				var unlock func() error
				if w%2 == 0 {
					r, err := lc.Lock(ctx, &v3lockpb.LockRequest{Name: []byte("svc/contended"), Lease: int64(s.Lease())})
					if err != nil {
						t.Error(err)
						return
					}
					unlock = func() error { _, err := lc.Unlock(ctx, &v3lockpb.UnlockRequest{Key: r.Key}); return err }
				} else {
					m := concurrency.NewMutex(s, "svc/contended")
					if err := m.Lock(ctx); err != nil {
						t.Error(err)
						return
					}
					unlock = func() error { return m.Unlock(ctx) }
				}
				if n := inside.Add(1); n != 1 {
					t.Errorf("%d holders at once", n)
				}
				entered.Add(1)
				time.Sleep(5 * time.Millisecond)
				inside.Add(-1)
				if err := unlock(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := entered.Load(); n != workers*rounds {
		t.Fatalf("%d entries, want %d", n, workers*rounds)
	}
}

// testElectionService: Campaign, Leader, Proclaim, Observe and Resign of
// the Election service, with concurrency.Election reading the same
// election, and etcd's errors for a deposed leader and an empty election.
func testElectionService(t *testing.T, cli *clientv3.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	ec := v3electionpb.NewElectionClient(cli.ActiveConnection())
	name := []byte("svc/elect")
	if _, err := ec.Leader(ctx, &v3electionpb.LeaderRequest{Name: name}); err == nil || statusText(err) != "election: no leader" {
		t.Fatalf("Leader of an election nobody campaigned in: %v, want election: no leader", err)
	}

	octx, ocancel := context.WithCancel(ctx)
	defer ocancel()
	obs, err := ec.Observe(octx, &v3electionpb.LeaderRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	observed := make(chan string, 16)
	go func() {
		defer close(observed)
		for {
			r, err := obs.Recv()
			if err != nil {
				return
			}
			observed <- string(r.Kv.Value)
		}
	}()
	expect := func(want string) {
		t.Helper()
		select {
		case v := <-observed:
			if v != want {
				t.Fatalf("observed %q, want %q", v, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("observed nothing, want %q", want)
		}
	}

	l1, l2 := grant(ctx, t, cli, 30), grant(ctx, t, cli, 30)
	c1, err := ec.Campaign(ctx, &v3electionpb.CampaignRequest{Name: name, Lease: int64(l1), Value: []byte("one")})
	if err != nil {
		t.Fatal(err)
	}
	expect("one")
	if c1.Leader.Lease != int64(l1) || c1.Leader.Rev == 0 {
		t.Fatalf("leader key %+v", c1.Leader)
	}
	lr, err := ec.Leader(ctx, &v3electionpb.LeaderRequest{Name: name})
	if err != nil || string(lr.Kv.Value) != "one" {
		t.Fatalf("Leader: %v %v", lr, err)
	}
	// The client's recipe reads the same election.
	s := newSession(t, cli, 30)
	if l, err := concurrency.NewElection(s, string(name)).Leader(ctx); err != nil || string(l.Kvs[0].Value) != "one" {
		t.Fatalf("concurrency.Election.Leader: %v %v", l, err)
	}

	second := make(chan *v3electionpb.CampaignResponse, 1)
	go func() {
		r, err := ec.Campaign(ctx, &v3electionpb.CampaignRequest{Name: name, Lease: int64(l2), Value: []byte("two")})
		if err != nil {
			t.Error(err)
		}
		second <- r
	}()
	select {
	case r := <-second:
		t.Fatalf("a second campaign won while the first led: %v", r)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := ec.Proclaim(ctx, &v3electionpb.ProclaimRequest{Leader: c1.Leader, Value: []byte("one again")}); err != nil {
		t.Fatal(err)
	}
	expect("one again")
	if _, err := ec.Resign(ctx, &v3electionpb.ResignRequest{Leader: c1.Leader}); err != nil {
		t.Fatal(err)
	}
	var c2 *v3electionpb.CampaignResponse
	select {
	case c2 = <-second:
	case <-time.After(10 * time.Second):
		t.Fatal("the second campaign did not win after the first resigned")
	}
	expect("two")
	if c2 == nil || c2.Leader.Rev <= c1.Leader.Rev {
		t.Fatalf("second leader %v after %v", c2, c1.Leader)
	}
	_, err = ec.Proclaim(ctx, &v3electionpb.ProclaimRequest{Leader: c1.Leader, Value: []byte("deposed")})
	if err == nil || statusText(err) != "election: not leader" {
		t.Fatalf("Proclaim by a deposed leader: %v, want election: not leader", err)
	}
	if _, err := ec.Proclaim(ctx, &v3electionpb.ProclaimRequest{Value: []byte("x")}); err == nil {
		t.Fatal("Proclaim without a leader key succeeded")
	}
	// Resigning twice is no error, as in etcd.
	if _, err := ec.Resign(ctx, &v3electionpb.ResignRequest{Leader: c1.Leader}); err != nil {
		t.Fatalf("a second Resign: %v", err)
	}
	if _, err := cli.Revoke(ctx, l2); err != nil {
		t.Fatal(err)
	}
	if _, err := ec.Leader(ctx, &v3electionpb.LeaderRequest{Name: name}); err == nil || statusText(err) != "election: no leader" {
		t.Fatalf("Leader after the leader's lease was revoked: %v", err)
	}
}
