package clientrate

import (
	"strconv"
	"testing"
	"time"
)

// TestLimiter_PerClient: each address has its own bucket of Burst, refilled
// at Rate; a refusal says how long to wait; a nil Limiter allows all.
func TestLimiter_PerClient(t *testing.T) {
	l := New(Config{Rate: 2, Burst: 2})
	now := time.Unix(0, 0)
	for i := range 2 {
		if ok, _ := l.Allow("a", now); !ok {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	if ok, wait := l.Allow("a", now); ok || wait <= 0 || wait > 500*time.Millisecond {
		t.Fatalf("past the burst: %v, wait %v", ok, wait)
	}
	if ok, _ := l.Allow("b", now); !ok {
		t.Fatal("another address was refused")
	}
	if ok, _ := l.Allow("a", now.Add(500*time.Millisecond)); !ok {
		t.Fatal("refused after the bucket refilled")
	}
	var none *Limiter
	if ok, _ := none.Allow("a", now); !ok || New(Config{}) != nil {
		t.Fatal("no limit")
	}
}

func TestLimiter_ForgetsIdleClients(t *testing.T) {
	l := New(Config{Rate: 1, Burst: 1})
	now := time.Unix(0, 0)
	for i := range maxClients {
		l.Allow(strconv.Itoa(i), now.Add(time.Duration(i)))
	}
	l.Allow("new", now.Add(time.Hour))
	if n := len(l.m); n > maxClients/2+2 {
		t.Fatalf("%d clients remembered after the table filled, want about half of %d", n, maxClients)
	}
	if _, ok := l.m["new"]; !ok {
		t.Fatal("the new client was not kept")
	}
}
