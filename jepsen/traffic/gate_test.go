package traffic

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestGate_CloseWaitsForWritesInFlight(t *testing.T) {
	g := &Gate{}
	ctx := context.Background()
	if !g.enter(ctx) {
		t.Fatal("enter on an open gate failed")
	}
	closed := make(chan error, 1)
	go func() { closed <- g.Close(ctx) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v with a write in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	g.leave()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return after the write left")
	}

	// Closed: a new write waits until Open, or gives up with its context.
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if g.enter(short) {
		t.Fatal("enter passed a closed gate")
	}
	entered := make(chan bool, 1)
	go func() { entered <- g.enter(ctx) }()
	select {
	case <-entered:
		t.Fatal("enter passed a closed gate")
	case <-time.After(50 * time.Millisecond):
	}
	g.Open()
	select {
	case ok := <-entered:
		if !ok {
			t.Fatal("enter failed after Open")
		}
		g.leave()
	case <-time.After(5 * time.Second):
		t.Fatal("enter still waits after Open")
	}
}

func TestGate_CloseGivesUpWithItsContext(t *testing.T) {
	g := &Gate{}
	g.enter(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := g.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close with a stuck write = %v, want the context's error", err)
	}
	g.Open()
	g.leave()
}

func TestGate_Nil(t *testing.T) {
	var g *Gate
	if !g.enter(context.Background()) {
		t.Fatal("a nil gate is not open")
	}
	g.leave()
	g.Cut("http://127.0.0.1:1")
	g.Uncut()
	if err := g.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.Open()
}

func TestGate_CutRefusesRequestsToTheNode(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	g := &Gate{}
	hc := &http.Client{Transport: g.transport(http.DefaultTransport)}
	get := func() error {
		resp, err := hc.Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(); err != nil {
		t.Fatalf("before Cut: %v", err)
	}
	g.Cut(srv.URL)
	err := get()
	var op *net.OpError
	if !errors.Is(err, errCut) || !errors.As(err, &op) || op.Op != "dial" {
		t.Fatalf("after Cut: %v, want errCut as a failed dial (so that clients try the next node)", err)
	}
	g.Uncut()
	if err := get(); err != nil {
		t.Fatalf("after Uncut: %v", err)
	}
}
