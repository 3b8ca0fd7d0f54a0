package etcdapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// Lease IDs and session ids map one to one, and in the same order.
func TestLeaseIDs_MapToSessionsInOrder(t *testing.T) {
	ids := []int64{1, 9, 10, 255, 1 << 40, math.MaxInt64}
	prev := ""
	for _, id := range ids {
		s := sessionOf(id)
		if leaseOf(s) != id {
			t.Fatalf("lease %d is session %q, which maps back to %d", id, s, leaseOf(s))
		}
		if s <= prev {
			t.Fatalf("session %q of lease %d sorts before %q", s, id, prev)
		}
		prev = s
	}
	if sessionOf(10) != "etcd-000000000000000a" {
		t.Fatalf("lease 10 is %q", sessionOf(10))
	}
	for _, s := range []string{"", "0c6f12", "etcd-", "etcd-0000000000000000a", "etcd-ffffffffffffffff", "etcd-00000000000000zz"} {
		if leaseOf(s) != 0 {
			t.Fatalf("session %q has lease %d, want none", s, leaseOf(s))
		}
	}
	for range 100 {
		if newLeaseID() <= 0 {
			t.Fatal("a lease ID that is not positive")
		}
	}
}

// A range needs a rule that covers all of it.
func TestRangeAllowed(t *testing.T) {
	tok := acl.Token{Rules: []acl.Rule{{Kind: acl.Key, Prefix: "app/", Access: acl.Write}, {Kind: acl.Key, Prefix: "pub/", Access: acl.Read},
		{Kind: acl.Lock, Prefix: "", Access: acl.Write}}}
	cases := []struct {
		key, end string
		access   acl.Access
		want     bool
	}{
		{"app/a", "", acl.Write, true},
		{"app/a", "", acl.Read, true},
		{"pub/a", "", acl.Read, true},
		{"pub/a", "", acl.Write, false},
		{"other", "", acl.Read, false},
		{"app/", "app0", acl.Read, true},
		{"app/a", "app/b", acl.Write, true},
		{"app/", "app1", acl.Read, false},
		{"app/", "\x00", acl.Read, false},
		{"ap", "app0", acl.Read, false},
	}
	for _, c := range cases {
		if got := rangeAllowed(tok, []byte(c.key), []byte(c.end), c.access); got != c.want {
			t.Errorf("%s on [%q, %q): %v, want %v", c.access, c.key, c.end, got, c.want)
		}
	}
	all := acl.Token{Rules: []acl.Rule{{Kind: acl.Key, Prefix: "", Access: acl.Read}}}
	if !rangeAllowed(all, []byte{0}, []byte{0}, acl.Read) || !rangeAllowed(acl.Token{Admin: true}, []byte("a"), []byte{0}, acl.Write) {
		t.Fatal("a rule of every key, or an admin token, does not cover every key")
	}
}

// shapeRange counts the whole range, then filters, sorts and limits.
func TestShapeRange(t *testing.T) {
	var kvs []fsm.KV
	for i, k := range []string{"a", "b", "c", "d"} {
		kvs = append(kvs, fsm.KV{Key: []byte(k), Value: []byte{byte('4' - i)}, CreateIndex: uint64(10 - i), ModifyIndex: uint64(20 + i), Version: uint64(i%2 + 1)})
	}
	show := func(r *pb.RangeResponse) string {
		var b strings.Builder
		for _, kv := range r.Kvs {
			b.Write(kv.Key)
		}
		return fmt.Sprintf("%s %d %v", b.String(), r.Count, r.More)
	}
	cases := []struct {
		r    *pb.RangeRequest
		want string
	}{
		{&pb.RangeRequest{}, "abcd 4 false"},
		{&pb.RangeRequest{Limit: 3}, "abc 4 true"},
		{&pb.RangeRequest{SortOrder: pb.RangeRequest_DESCEND}, "dcba 4 false"},
		{&pb.RangeRequest{SortTarget: pb.RangeRequest_CREATE}, "dcba 4 false"},
		{&pb.RangeRequest{SortTarget: pb.RangeRequest_VERSION, SortOrder: pb.RangeRequest_DESCEND}, "bdac 4 false"},
		{&pb.RangeRequest{SortTarget: pb.RangeRequest_VALUE, Limit: 1}, "d 4 true"},
		{&pb.RangeRequest{MinModRevision: 21, MaxCreateRevision: 9}, "bcd 4 false"},
		{&pb.RangeRequest{MinModRevision: 21, MaxModRevision: 22}, "bc 4 false"},
		{&pb.RangeRequest{MinCreateRevision: 8, MaxModRevision: 21}, "ab 4 false"},
		{&pb.RangeRequest{CountOnly: true}, " 4 false"},
	}
	for _, c := range cases {
		if got := show(shapeRange(kvs, c.r)); got != c.want {
			t.Errorf("%v: %s, want %s", c.r, got, c.want)
		}
	}
}

// A watch waits on the key, or on the longest prefix its range shares.
func TestTopicOf(t *testing.T) {
	if topicOf([]byte("a/b"), nil) != fsm.KeyTopic([]byte("a/b")) ||
		topicOf([]byte("a/"), []byte("a0")) != fsm.PrefixTopic([]byte("a")) ||
		topicOf([]byte("a/b"), []byte("a/d")) != fsm.PrefixTopic([]byte("a/")) ||
		topicOf([]byte("x"), []byte{0}) != fsm.PrefixTopic(nil) {
		t.Fatal("wrong topic")
	}
}

// The node's errors become etcd's, which etcd's clients recognise.
func TestGRPCErr(t *testing.T) {
	cases := []struct {
		err  error
		want error
	}{
		{api.Errorf(api.CodeNoLeader, "x"), rpctypes.ErrGRPCNoLeader},
		{api.Errorf(api.CodeTimeout, "x"), rpctypes.ErrGRPCTimeout},
		{api.Errorf(api.CodeSessionExpired, "x"), rpctypes.ErrGRPCLeaseNotFound},
		{&fsm.CompactedError{Oldest: 3}, rpctypes.ErrGRPCCompacted},
		{fmt.Errorf("%w: x", fsm.ErrFutureRevision), rpctypes.ErrGRPCFutureRev},
		{fmt.Errorf("%w: x", fsm.ErrSessionExists), rpctypes.ErrGRPCLeaseExist},
	}
	for _, c := range cases {
		if got := grpcErr(c.err); !errors.Is(rpctypes.Error(got), rpctypes.Error(c.want)) {
			t.Errorf("%v: %v, want %v", c.err, got, c.want)
		}
	}
}

// clusterBackend is a Backend that knows only its cluster's description.
type clusterBackend struct {
	Backend
	c api.Cluster
	f *fsm.FSM
}

func (b clusterBackend) ID() string                                   { return "n1" }
func (b clusterBackend) FSM() *fsm.FSM                                { return b.f }
func (b clusterBackend) Cluster(context.Context) (api.Cluster, error) { return b.c, nil }

// TestAlarm_NoSpaceWhileTheDiskIsFull: the alarm list has the node's
// NOSPACE while its storage problem is a full disk, and nothing for any
// other storage error or none.
func TestAlarm_NoSpaceWhileTheDiskIsFull(t *testing.T) {
	for _, tt := range []struct {
		problem *api.StorageProblem
		want    int
	}{
		{nil, 0},
		{&api.StorageProblem{Reason: api.CodeStorageError, Error: "input/output error"}, 0},
		{&api.StorageProblem{Reason: api.CodeStorageFull, Error: "no space left on device"}, 1},
	} {
		s := New(Config{Backend: clusterBackend{c: api.Cluster{StorageProblem: tt.problem}, f: fsm.New()}})
		m := &maintenanceServer{s: s}
		r, err := m.Alarm(context.Background(), &pb.AlarmRequest{Action: pb.AlarmRequest_GET})
		if err != nil || len(r.Alarms) != tt.want {
			t.Fatalf("problem %+v: %v %v, want %d alarms", tt.problem, r, err, tt.want)
		}
		if tt.want == 1 && (r.Alarms[0].Alarm != pb.AlarmType_NOSPACE || r.Alarms[0].MemberID != hash64("n1")) {
			t.Fatalf("alarm %+v", r.Alarms[0])
		}
	}
}

// TestNoLeader: the answers that say nothing was done for want of a
// leader are tried again; a timeout (outcome unknown) and other errors
// are not.
func TestNoLeader(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{rpctypes.ErrGRPCNoLeader, true},
		{status.Error(codes.Unavailable, "etcdserver: no leader (the node a call was forwarded to does not lead either)"), true},
		{grpcErr(api.Errorf(api.CodeNoLeader, "the master lease ran out")), true},
		{rpctypes.ErrGRPCTimeout, false},
		{status.Error(codes.Unavailable, "etcdserver: request timed out, possibly due to previous leader failure"), false},
		{status.Error(codes.Internal, "etcdserver: no leader"), false},
		{errors.New("etcdserver: no leader"), false},
		{nil, false},
	} {
		if got := noLeader(tt.err); got != tt.want {
			t.Errorf("noLeader(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
