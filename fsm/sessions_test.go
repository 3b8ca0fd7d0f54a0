package fsm

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestCreateSession_Behaviour(t *testing.T) {
	tests := []struct {
		name string
		c    Command
		err  error
	}{
		{"new id", Command{Op: OpCreateSession, Session: "b", Name: "worker", TTL: time.Second, LockDelay: 5 * time.Second}, nil},
		{"no lock-delay", Command{Op: OpCreateSession, Session: "b", TTL: time.Second}, nil},
		{"id in use", Command{Op: OpCreateSession, Session: "a", TTL: time.Second}, ErrSessionExists},
		{"empty id", Command{Op: OpCreateSession, TTL: time.Second}, ErrBadCommand},
		{"zero ttl", Command{Op: OpCreateSession, Session: "b"}, ErrBadCommand},
		{"negative ttl", Command{Op: OpCreateSession, Session: "b", TTL: -time.Second}, ErrBadCommand},
		{"negative lock-delay", Command{Op: OpCreateSession, Session: "b", TTL: time.Second, LockDelay: -1}, ErrBadCommand},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustApply(create("a", 0))
			before := mustStateJSON(t, h.f)
			res := h.apply(tt.c)
			if !errors.Is(res.Err, tt.err) {
				t.Fatalf("err %v, want %v", res.Err, tt.err)
			}
			if tt.err != nil {
				if res.Session != nil || !bytes.Equal(before, mustStateJSON(t, h.f)) {
					t.Fatalf("refusal changed the state or returned a session")
				}
				return
			}
			want := Session{ID: tt.c.Session, Name: tt.c.Name, TTL: tt.c.TTL, LockDelay: tt.c.LockDelay, CreateIndex: 2}
			if res.Session == nil || *res.Session != want {
				t.Fatalf("result session %+v, want %+v", res.Session, want)
			}
			if got, ok := h.f.Session(want.ID); !ok || got != want {
				t.Fatalf("Session(%q) = %+v %v, want %+v", want.ID, got, ok, want)
			}
			if got := h.f.Sessions(); len(got) != 2 || got[0].ID != "a" || got[1] != want {
				t.Fatalf("Sessions() = %+v", got)
			}
		})
	}
}

func TestEndSession_Behaviour(t *testing.T) {
	tests := []struct {
		name      string
		end       Command
		wantDelay bool // the locks it held keep a lock-delay
	}{
		{"destroy releases at once", destroy("a"), false},
		{"expire keeps the lock-delay", expire("a"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			for _, id := range []string{"a", "b", "c"} {
				h.mustApply(create(id, 10*time.Second)) // 1..3
			}
			h.mustApply(acquire("a", "x", Exclusive, 0))         // 4
			h.mustApply(acquire("a", "y", Shared, 0))            // 5
			h.mustApply(acquire("b", "y", Shared, 0))            // 6
			h.mustApply(acquire("b", "z", Exclusive, 0))         // 7
			h.mustApply(acquire("a", "z", Exclusive, time.Hour)) // 8: a waits on z
			h.mustApply(acquire("c", "x", Exclusive, time.Hour)) // 9: c waits on x
			h.mustApply(campaign("a", "e", "va", 0))             // 10
			h.mustApply(campaign("c", "e", "vc", time.Hour))     // 11
			if locks, elections := h.f.SessionHolds("a"); !slices.Equal(locks, []string{"x", "y"}) || !slices.Equal(elections, []string{"e"}) {
				t.Fatalf("SessionHolds(a) = %v %v", locks, elections)
			}

			res := h.mustApply(tt.end) // 12
			if !slices.Equal(res.Released, []string{"x", "y"}) || !slices.Equal(res.Resigned, []string{"e"}) {
				t.Fatalf("released %v resigned %v", res.Released, res.Resigned)
			}
			checkInvariants(t, h.f)
			if _, ok := h.f.Session("a"); ok {
				t.Fatal("session a still exists")
			}
			if locks, elections := h.f.SessionHolds("a"); locks != nil || elections != nil {
				t.Fatalf("SessionHolds(a) after end = %v %v", locks, elections)
			}
			if got := waiters(h.f.Lock("z")); got != nil {
				t.Fatalf("z waiters %v, want none", got)
			}
			if got := holders(h.f.Lock("y")); !slices.Equal(got, []string{"b:6"}) {
				t.Fatalf("y holders %v", got)
			}
			x, e := h.f.Lock("x"), h.f.Election("e")
			if tt.wantDelay {
				until := t0.Add(10 * time.Second)
				if x.Holders != nil || !x.DelayUntil.Equal(until) || e.Holders != nil || !e.DelayUntil.Equal(until) || e.Value != "" {
					t.Fatalf("after expiry: x %+v e %+v", x, e)
				}
				if got := h.f.Lock("y").DelayUntil; !got.Equal(until) {
					t.Fatalf("shared lock y delay %v, want %v", got, until)
				}
				return
			}
			if got := holders(x); !slices.Equal(got, []string{"c:12"}) {
				t.Fatalf("x holders %v, want c:12", got)
			}
			if got := holders(e); !slices.Equal(got, []string{"c:12"}) || e.Value != "vc" {
				t.Fatalf("e holders %v value %q, want c:12 vc", got, e.Value)
			}
		})
	}
}

func TestMembers_Behaviour(t *testing.T) {
	h := newHarness(t)
	m1 := Member{ID: "n1", Peer: "127.0.0.1:7401", HTTP: "127.0.0.1:7400"}
	m1b := Member{ID: "n1", Peer: "127.0.0.1:8401", HTTP: "127.0.0.1:8400"}
	m2 := Member{ID: "n2", Peer: "127.0.0.2:7401", HTTP: "127.0.0.2:7400"}
	steps := []struct {
		c    Command
		err  error
		want []Member
	}{
		{Command{Op: OpSetMember, Member: &m2}, nil, []Member{m2}},
		{Command{Op: OpSetMember, Member: &m1}, nil, []Member{m1, m2}},
		{Command{Op: OpSetMember, Member: &m1b}, nil, []Member{m1b, m2}},
		{Command{Op: OpSetMember}, ErrBadCommand, []Member{m1b, m2}},
		{Command{Op: OpSetMember, Member: &Member{Peer: "x"}}, ErrBadCommand, []Member{m1b, m2}},
		{Command{Op: OpRemoveMember, Member: &Member{ID: "n2"}}, nil, []Member{m1b}},
		{Command{Op: OpRemoveMember, Member: &Member{ID: "n3"}}, nil, []Member{m1b}},
		{Command{Op: OpRemoveMember}, ErrBadCommand, []Member{m1b}},
	}
	for i, s := range steps {
		res := h.apply(s.c)
		if !errors.Is(res.Err, s.err) {
			t.Fatalf("step %d: err %v, want %v", i, res.Err, s.err)
		}
		if got := h.f.Members(); !slices.Equal(got, s.want) {
			t.Fatalf("step %d: members %v, want %v", i, got, s.want)
		}
	}
}
