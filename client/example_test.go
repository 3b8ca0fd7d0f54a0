package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/server"
)

// startExampleServer runs a single-node lockd in this process so that the
// examples run as they are; a real program points client.New at its cluster.
func startExampleServer() (addr string, stop func()) {
	dir, err := os.MkdirTemp("", "lockd-example-")
	if err != nil {
		log.Fatal(err)
	}
	nc := lease.DefaultConfig()
	nc.ID, nc.DataDir, nc.NoBootWait = "n1", dir, true
	s, err := server.Start(server.Config{Node: nc, HTTPListen: "127.0.0.1:0", PeerListen: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for s.Node().Ready(ctx) != nil && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	return s.HTTPURL(), func() { _ = s.Close(); _ = os.RemoveAll(dir) }
}

func ExampleMutex() {
	addr, stop := startExampleServer()
	defer stop()
	ctx := context.Background()

	c, err := client.New(addr) // list several members in production
	if err != nil {
		log.Fatal(err)
	}
	s, err := client.NewSession(ctx, c, client.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	m := client.NewMutex(s, "jobs/nightly")
	if err := m.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	// Send the token with every write to the protected resource.
	fmt.Println("holding, token > 0:", m.Token() > 0)
	select {
	case <-m.Lost():
		fmt.Println("lost the lock: stop writing")
	default:
	}
	if err := m.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("held after unlock:", m.Held())
	// Output:
	// holding, token > 0: true
	// held after unlock: false
}

func ExampleMutex_TryLock() {
	addr, stop := startExampleServer()
	defer stop()
	ctx := context.Background()
	c, _ := client.New(addr)
	a, _ := client.NewSession(ctx, c)
	b, _ := client.NewSession(ctx, c)
	defer a.Close()
	defer b.Close()

	if err := client.NewMutex(a, "report").Lock(ctx); err != nil {
		log.Fatal(err)
	}
	err := client.NewMutex(b, "report").TryLock(ctx)
	fmt.Println(err != nil, errors.Is(err, client.ErrLockHeld))
	// Output: true true
}

func ExampleElection() {
	addr, stop := startExampleServer()
	defer stop()
	ctx := context.Background()
	c, _ := client.New(addr)
	s, _ := client.NewSession(ctx, c)
	defer s.Close()

	e := client.NewElection(s, "scheduler")
	if err := e.Campaign(ctx, "10.0.0.7:9000"); err != nil { // blocks until we lead
		log.Fatal(err)
	}
	leader, _ := c.Election(ctx, "scheduler")
	fmt.Println("leader value:", leader.Value, "mine:", leader.Session == s.ID())
	if err := e.Proclaim(ctx, "10.0.0.7:9001"); err != nil {
		log.Fatal(err)
	}
	leader, _ = e.Leader(ctx)
	fmt.Println("leader value:", leader.Value)
	if err := e.Resign(ctx); err != nil {
		log.Fatal(err)
	}
	_, err := e.Leader(ctx)
	fmt.Println(err)
	// Output:
	// leader value: 10.0.0.7:9000 mine: true
	// leader value: 10.0.0.7:9001
	// client: election has no leader
}

func ExampleSession() {
	addr, stop := startExampleServer()
	defer stop()
	c, _ := client.New(addr)
	s, err := client.NewSession(context.Background(), c, client.WithTTL(5*time.Second), client.WithLockDelay(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	// Work under s.Ctx(): it is cancelled when the session can no longer be
	// sure it is alive, before the server could hand its locks to others.
	fmt.Println(s.TTL(), s.LockDelay(), s.Alive(), time.Until(s.Deadline()) < s.TTL())
	s.Close()
	<-s.Done()
	fmt.Println(s.Err())
	// Output:
	// 5s 1s true true
	// context canceled
}

func ExampleFence() {
	var f client.Fence
	fmt.Println(f.Admit("jobs/nightly", 12)) // the current holder writes
	fmt.Println(f.Admit("jobs/nightly", 15)) // a newer holder writes
	fmt.Println(f.Admit("jobs/nightly", 12)) // the old holder wakes up
	// Output:
	// <nil>
	// <nil>
	// client: stale fencing token: token 12 for "jobs/nightly", but 15 has been accepted
}

func ExampleClient_CheckToken() {
	addr, stop := startExampleServer()
	defer stop()
	ctx := context.Background()
	c, _ := client.New(addr)
	s, _ := client.NewSession(ctx, c)
	defer s.Close()
	m := client.NewMutex(s, "db/primary")
	if err := m.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	tok := m.Token()
	ok, _ := c.CheckToken(ctx, "db/primary", tok)
	fmt.Println(ok)
	if err := m.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	ok, _ = c.CheckToken(ctx, "db/primary", tok)
	fmt.Println(ok)
	// Output:
	// true
	// false
}

// A leader publishes its address in an ephemeral key of its session, so
// that the key goes when the leader does; clients read it and watch it.
func ExampleKV_Watch() {
	addr, stop := startExampleServer()
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, _ := client.New(addr)
	kv := c.KV()

	// A client: read where the leader is (nowhere yet), then follow changes
	// from the index of that read.
	r, err := kv.Get(ctx, "svc/api/leader", client.Default)
	fmt.Println("before:", errors.Is(err, client.ErrKeyNotFound))
	events := kv.Watch(ctx, "svc/api/leader", r.Index)

	// The leader: publish, then step down (its session ends).
	s, _ := client.NewSession(ctx, c)
	if _, err := s.KV().Put(ctx, "svc/api/leader", []byte("10.0.0.7:9000"), client.Ephemeral()); err != nil {
		log.Fatal(err)
	}
	s.Close()

	for range 2 {
		ev := <-events
		if ev.Err != nil { // ErrCompacted: read again and watch from that read
			log.Fatal(ev.Err)
		}
		fmt.Println(ev.Type, ev.KV.Key, string(ev.KV.Value))
	}
	// Output:
	// before: true
	// put svc/api/leader 10.0.0.7:9000
	// delete svc/api/leader
}

// A write fenced by a Mutex applies only while the Mutex's holding is the
// lock's: a holder that lost the lock, however late it wakes, cannot
// overwrite what the next holder wrote.
func ExampleFencedBy() {
	addr, stop := startExampleServer()
	defer stop()
	ctx := context.Background()
	c, _ := client.New(addr)
	a, _ := client.NewSession(ctx, c, client.WithLockDelay(0))
	b, _ := client.NewSession(ctx, c, client.WithLockDelay(0))
	defer b.Close()
	old := client.NewMutex(a, "reports/daily")
	if err := old.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	lock, token := old.Name(), old.Token()
	_, err := c.KV().Put(ctx, "reports/daily/out", []byte("v1"), client.FencedBy(old))
	fmt.Println(err)
	a.Close() // a's holding ends; b takes the lock
	if err := client.NewMutex(b, "reports/daily").Lock(ctx); err != nil {
		log.Fatal(err)
	}
	_, err = c.KV().Put(ctx, "reports/daily/out", []byte("late"), client.WithGuard(lock, token))
	fmt.Println(errors.Is(err, client.ErrStaleToken))
	// Output:
	// <nil>
	// true
}
