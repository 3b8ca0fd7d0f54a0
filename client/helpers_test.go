package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/test/servertest"
)

func mustClient(t *testing.T, endpoints ...string) *client.Client {
	t.Helper()
	c, err := client.New(endpoints...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustSession(t *testing.T, c *client.Client, opts ...client.SessionOption) *client.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := client.NewSession(ctx, c, opts...)
	if err != nil {
		t.Fatalf("new session: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	servertest.WaitFor(t, within, what, cond)
}
