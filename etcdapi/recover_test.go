package etcdapi

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/lockd/lockd/fsm"
)

// panicky is a service whose calls panic, registered beside etcd's on
// the server GRPCServer builds.
type panicky struct {
	grpc_health_v1.UnimplementedHealthServer
}

func (panicky) Check(context.Context, *grpc_health_v1.HealthCheckRequest) (*grpc_health_v1.HealthCheckResponse, error) {
	panic("a bug in a unary handler")
}

func (panicky) Watch(*grpc_health_v1.HealthCheckRequest, grpc_health_v1.Health_WatchServer) error {
	panic("a bug in a stream handler")
}

// syncBuffer is a bytes.Buffer for a logger written by gRPC's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestGRPCServer_PanicAnswersInternal: a handler that panics answers its
// call (unary) or ends its stream with Internal and a log line with the
// stack; the node's process goes on serving (without the recovery the
// panic ends the test binary).
func TestGRPCServer_PanicAnswersInternal(t *testing.T) {
	var logs syncBuffer
	s := New(Config{Backend: clusterBackend{f: fsm.New()}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	g := s.GRPCServer()
	grpc_health_v1.RegisterHealthServer(g, panicky{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := grpc_health_v1.NewHealthClient(conn)
	for range 2 {
		_, err := h.Check(ctx, &grpc_health_v1.HealthCheckRequest{})
		if status.Code(err) != codes.Internal {
			t.Fatalf("unary call whose handler panicked: %v, want Internal", err)
		}
		w, err := h.Watch(ctx, &grpc_health_v1.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Recv(); status.Code(err) != codes.Internal {
			t.Fatalf("stream whose handler panicked: %v, want Internal", err)
		}
	}
	out := logs.String()
	for _, want := range []string{"a bug in a unary handler", "a bug in a stream handler", "/grpc.health.v1.Health/Check", "recover_test.go"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the log does not name %q:\n%s", want, out)
		}
	}
}
