package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/httpapi"
	"github.com/lockd/lockd/internal/certs"
	"github.com/lockd/lockd/lease"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

// etcdConn dials etcd's API of a node with raw gRPC stubs.
func etcdConn(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func etcdCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func wantCode(t *testing.T, what string, err error, code codes.Code, contains string) {
	t.Helper()
	s, _ := status.FromError(err)
	if err == nil || s.Code() != code || !strings.Contains(s.Message(), contains) {
		t.Fatalf("%s: got %v, want code %v with %q", what, err, code, contains)
	}
}

func keysOf(kvs []*mvccpb.KeyValue) string {
	var out []string
	for _, kv := range kvs {
		out = append(out, string(kv.Key))
	}
	return strings.Join(out, ",")
}

// TestEtcd_OffByDefaultAndServedWhereAsked: a node without EtcdListen
// listens on nothing for it, and the nodes that serve it answer through
// any leader, the one that does not serve it included (the peer port
// takes the forwarded calls).
func TestEtcd_OffByDefaultAndServedWhereAsked(t *testing.T) {
	etcd := servertest.ServeEtcd(t)
	c := servertest.NewWith(t, 3, func(i int, cfg *server.Config) {
		if i < 2 {
			etcd(i, cfg)
		}
	})
	if a := c.Nodes[2].EtcdAddr(); a != "" {
		t.Fatalf("node 3 was not asked to serve etcd's API, and listens on %s", a)
	}
	if len(c.EtcdAddrs()) != 2 {
		t.Fatalf("etcd addresses %v, want 2", c.EtcdAddrs())
	}
	ctx := etcdCtx(t)
	for i, addr := range c.EtcdAddrs() {
		kv := pb.NewKVClient(etcdConn(t, addr))
		key := []byte{'k', byte('0' + i)}
		if _, err := kv.Put(ctx, &pb.PutRequest{Key: key, Value: []byte("v")}); err != nil {
			t.Fatalf("put through node %d: %v", i+1, err)
		}
		r, err := kv.Range(ctx, &pb.RangeRequest{Key: key})
		if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "v" {
			t.Fatalf("range through node %d: %v %v", i+1, r, err)
		}
	}
	// Move leadership to the node without etcd's port: calls are still
	// forwarded to it.
	c.MoveLeadership(2)
	kv := pb.NewKVClient(etcdConn(t, c.EtcdAddrs()[0]))
	if _, err := kv.Put(ctx, &pb.PutRequest{Key: []byte("k9"), Value: []byte("v")}); err != nil {
		t.Fatalf("put forwarded to a leader without etcd's port: %v", err)
	}
	// What lockd does not serve is Unimplemented, naming the call.
	st, err := pb.NewMaintenanceClient(etcdConn(t, c.EtcdAddrs()[0])).Status(ctx, &pb.StatusRequest{})
	if err != nil || st.Leader == 0 || st.Leader == st.Header.MemberId || st.RaftAppliedIndex == 0 || !strings.HasPrefix(st.Version, "3.6.") {
		t.Fatalf("status of a follower: %v %v", st, err)
	}
	_, err = pb.NewMaintenanceClient(etcdConn(t, c.EtcdAddrs()[0])).Defragment(ctx, &pb.DefragmentRequest{})
	wantCode(t, "defragment", err, codes.Unimplemented, "Defragment")
	_, err = pb.NewAuthClient(etcdConn(t, c.EtcdAddrs()[0])).UserAdd(ctx, &pb.AuthUserAddRequest{Name: "x"})
	wantCode(t, "user add", err, codes.Unimplemented, "UserAdd")
	_, err = pb.NewClusterClient(etcdConn(t, c.EtcdAddrs()[0])).MemberAdd(ctx, &pb.MemberAddRequest{PeerURLs: []string{"http://127.0.0.1:1"}})
	wantCode(t, "member add", err, codes.Unimplemented, "MemberAdd")
	// MemberList: every member, the etcd URL of each that serves it (each
	// registers its own), the IDs of the headers.
	want := map[string]string{"n1": "http://" + c.EtcdAddrs()[0], "n2": "http://" + c.EtcdAddrs()[1], "n3": ""}
	var got map[string]string
	servertest.WaitFor(t, 10*time.Second, "every member's etcd URL in MemberList", func() bool {
		ml, err := pb.NewClusterClient(etcdConn(t, c.EtcdAddrs()[1])).MemberList(ctx, &pb.MemberListRequest{})
		if err != nil {
			t.Fatal(err)
		}
		got = map[string]string{}
		for _, m := range ml.Members {
			got[m.Name] = strings.Join(m.ClientURLs, ",")
			if m.IsLearner || len(m.PeerURLs) != 1 || !strings.HasPrefix(m.PeerURLs[0], "http://") {
				t.Fatalf("member %+v", m)
			}
			if m.Name == "n1" && m.ID != st.Header.MemberId {
				t.Fatalf("n1's ID %x in MemberList, %x in its headers", m.ID, st.Header.MemberId)
			}
		}
		return fmt.Sprint(got) == fmt.Sprint(want)
	})
	// Alarms: none to list; raising one is lockd's own business.
	mc := pb.NewMaintenanceClient(etcdConn(t, c.EtcdAddrs()[0]))
	if al, err := mc.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_GET}); err != nil || len(al.Alarms) != 0 {
		t.Fatalf("alarm list: %v %v", al, err)
	}
	_, err = mc.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, Alarm: pb.AlarmType_NOSPACE})
	wantCode(t, "alarm activate", err, codes.Unimplemented, "ACTIVATE")
}

// recvWatch receives the next answer of a watch stream.
func recvWatch(t *testing.T, w pb.Watch_WatchClient) *pb.WatchResponse {
	t.Helper()
	r, err := w.Recv()
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	return r
}

func eventsOf(r *pb.WatchResponse) string {
	var out []string
	for _, e := range r.Events {
		s := fmt.Sprintf("%s %s=%s@%d", e.Type, e.Kv.Key, e.Kv.Value, e.Kv.ModRevision)
		if e.PrevKv != nil {
			s += " prev=" + string(e.PrevKv.Value)
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// TestEtcd_Watch: a watch on a follower sees every change of its range in
// order, from a past revision or from now, with prev_kv and filters;
// cancel ends it; a start the history no longer reaches is canceled with
// the compact revision.
func TestEtcd_Watch(t *testing.T) {
	c := servertest.NewWith(t, 3, servertest.ServeEtcd(t), func(cfg *lease.Config) { cfg.KVHistory = kvHistory })
	leader := c.WaitLeader()
	f := c.Follower(leader)
	ctx := etcdCtx(t)
	kv := pb.NewKVClient(etcdConn(t, c.Nodes[leader].EtcdAddr()))
	first, err := kv.Put(ctx, &pb.PutRequest{Key: []byte("w/a"), Value: []byte("1")})
	if err != nil {
		t.Fatal(err)
	}
	w, err := pb.NewWatchClient(etcdConn(t, c.Nodes[f].EtcdAddr())).Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	create := func(r *pb.WatchCreateRequest) int64 {
		t.Helper()
		if err := w.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: r}}); err != nil {
			t.Fatal(err)
		}
		got := recvWatch(t, w)
		if !got.Created {
			t.Fatalf("create answered %v", got)
		}
		return got.WatchId
	}
	// From the first put's revision, with the records before each change.
	past := create(&pb.WatchCreateRequest{Key: []byte("w/"), RangeEnd: []byte("w0"), StartRevision: first.Header.Revision, PrevKv: true})
	if got := recvWatch(t, w); got.WatchId != past || eventsOf(got) != fmt.Sprintf("PUT w/a=1@%d", first.Header.Revision) {
		t.Fatalf("history: %v", eventsOf(got))
	}
	// From now, puts only, of one key.
	now := create(&pb.WatchCreateRequest{Key: []byte("w/a"), Filters: []pb.WatchCreateRequest_FilterType{pb.WatchCreateRequest_NODELETE}})
	if now == past {
		t.Fatalf("two watches with id %d", now)
	}
	p2, _ := kv.Put(ctx, &pb.PutRequest{Key: []byte("w/a"), Value: []byte("2")})
	d, _ := kv.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte("w/a")})
	_, _ = kv.Put(ctx, &pb.PutRequest{Key: []byte("x"), Value: []byte("outside")})
	want := map[int64][]string{
		past: {fmt.Sprintf("PUT w/a=2@%d prev=1", p2.Header.Revision), fmt.Sprintf("DELETE w/a=@%d prev=2", d.Header.Revision)},
		now:  {fmt.Sprintf("PUT w/a=2@%d", p2.Header.Revision)},
	}
	got := map[int64][]string{}
	for len(got[past]) < 2 || len(got[now]) < 1 {
		r := recvWatch(t, w)
		if len(r.Events) > 0 {
			got[r.WatchId] = append(got[r.WatchId], strings.Split(eventsOf(r), "; ")...)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if err := w.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CancelRequest{CancelRequest: &pb.WatchCancelRequest{WatchId: now}}}); err != nil {
		t.Fatal(err)
	}
	if r := recvWatch(t, w); !r.Canceled || r.WatchId != now {
		t.Fatalf("cancel answered %v", r)
	}
	if err := w.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_ProgressRequest{ProgressRequest: &pb.WatchProgressRequest{}}}); err != nil {
		t.Fatal(err)
	}
	if r := recvWatch(t, w); r.WatchId != -1 || r.Header.Revision < d.Header.Revision {
		t.Fatalf("progress answered %v", r)
	}
	// Churn the history past the first put: a watch from it is canceled
	// with the oldest revision it could start from, which then works.
	var last int64
	for i := range kvHistory.MinEvents + 5 {
		p, err := kv.Put(ctx, &pb.PutRequest{Key: []byte("churn"), Value: []byte{byte(i)}})
		if err != nil {
			t.Fatal(err)
		}
		last = p.Header.Revision
	}
	// Wait for the follower to apply every churn put, not only the first
	// that compacts: otherwise its history may still move on between the
	// canceled watch and the one from the revision that watch named.
	servertest.WaitFor(t, 5*time.Second, "the follower to apply the churn", func() bool {
		return c.Nodes[f].Node().FSM().KVIndex() >= uint64(last)
	})
	if got := c.Nodes[f].Node().FSM().Compacted(); got <= uint64(first.Header.Revision) {
		t.Fatalf("the follower's history compacted to %d, not past %d", got, first.Header.Revision)
	}
	if err := w.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{Key: []byte("churn"), StartRevision: first.Header.Revision}}}); err != nil {
		t.Fatal(err)
	}
	var r *pb.WatchResponse
	for r = recvWatch(t, w); r.WatchId == past || r.Created && !r.Canceled; r = recvWatch(t, w) {
	}
	if !r.Canceled || r.CompactRevision <= first.Header.Revision {
		t.Fatalf("a compacted watch answered %v", r)
	}
	from := create(&pb.WatchCreateRequest{Key: []byte("churn"), StartRevision: r.CompactRevision})
	for r = recvWatch(t, w); r.WatchId != from; r = recvWatch(t, w) {
	}
	if len(r.Events) == 0 {
		t.Fatalf("a watch from the compact revision answered %v", r)
	}
}

// TestEtcd_KV drives the KV service through a follower and the leader:
// byte keys, ranges and their options, transactions, past revisions.
func TestEtcd_KV(t *testing.T) {
	c := servertest.NewWith(t, 3, servertest.ServeEtcd(t), func(cfg *lease.Config) { cfg.KVHistory = kvHistory })
	leader := c.WaitLeader()
	f := c.Follower(leader)
	ctx := etcdCtx(t)
	kv := pb.NewKVClient(etcdConn(t, c.Nodes[f].EtcdAddr()))
	lkv := pb.NewKVClient(etcdConn(t, c.Nodes[leader].EtcdAddr()))

	// Byte keys no HTTP name allows: NUL, 0xff, spaces.
	odd := []byte{0, 0xff, ' ', 'x'}
	p1, err := kv.Put(ctx, &pb.PutRequest{Key: odd, Value: []byte("one")})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := kv.Put(ctx, &pb.PutRequest{Key: odd, Value: []byte("two"), PrevKv: true})
	if err != nil {
		t.Fatal(err)
	}
	if p2.PrevKv == nil || string(p2.PrevKv.Value) != "one" || p2.Header.Revision <= p1.Header.Revision {
		t.Fatalf("second put: %+v after %+v", p2, p1)
	}
	r, err := kv.Range(ctx, &pb.RangeRequest{Key: odd})
	if err != nil || len(r.Kvs) != 1 {
		t.Fatalf("range of the odd key: %v %v", r, err)
	}
	got := r.Kvs[0]
	if string(got.Value) != "two" || got.Version != 2 || got.CreateRevision != p1.Header.Revision || got.ModRevision != p2.Header.Revision {
		t.Fatalf("odd key %+v; puts at %d and %d", got, p1.Header.Revision, p2.Header.Revision)
	}
	// A put that keeps the value, or the lease.
	kept, err := kv.Put(ctx, &pb.PutRequest{Key: odd, IgnoreValue: true, PrevKv: true})
	if err != nil || string(kept.PrevKv.Value) != "two" {
		t.Fatalf("put with ignore_value: %v %v", kept, err)
	}
	if r, _ := kv.Range(ctx, &pb.RangeRequest{Key: odd}); string(r.Kvs[0].Value) != "two" || r.Kvs[0].Version != 3 {
		t.Fatalf("after a put with ignore_value: %v", r.Kvs)
	}
	_, err = kv.Put(ctx, &pb.PutRequest{Key: []byte("missing"), IgnoreLease: true})
	wantCode(t, "ignore_lease of a missing key", err, codes.InvalidArgument, "key not found")
	_, err = kv.Put(ctx, &pb.PutRequest{Key: odd, IgnoreValue: true, Value: []byte("x")})
	wantCode(t, "ignore_value with a value", err, codes.InvalidArgument, "value is provided")

	// The value at the first put's revision, from the history.
	old, err := kv.Range(ctx, &pb.RangeRequest{Key: odd, Revision: p1.Header.Revision})
	if err != nil || len(old.Kvs) != 1 || string(old.Kvs[0].Value) != "one" {
		t.Fatalf("range at revision %d: %v %v", p1.Header.Revision, old, err)
	}
	// A transaction that only reads, at that revision and now, from the
	// follower's own state (once it has applied the last put): no entry.
	servertest.WaitFor(t, 5*time.Second, "the follower to apply the last put", func() bool {
		return c.Nodes[f].Node().FSM().AppliedIndex() >= uint64(kept.Header.Revision)
	})
	ro, err := kv.Txn(ctx, &pb.TxnRequest{
		Compare: []*pb.Compare{{Key: odd, Target: pb.Compare_VALUE, Result: pb.Compare_EQUAL, TargetUnion: &pb.Compare_Value{Value: []byte("two")}}},
		Success: []*pb.RequestOp{
			{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: odd, Revision: p1.Header.Revision, Serializable: true}}},
			{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: odd, Serializable: true}}},
		}})
	if err != nil || !ro.Succeeded || string(ro.Responses[0].GetResponseRange().Kvs[0].Value) != "one" || string(ro.Responses[1].GetResponseRange().Kvs[0].Value) != "two" {
		t.Fatalf("a read-only txn: %v %v", ro, err)
	}
	before, err := kv.Range(ctx, &pb.RangeRequest{Key: odd, Revision: p1.Header.Revision - 1})
	if err != nil || len(before.Kvs) != 0 {
		t.Fatalf("range before the key existed: %v %v", before, err)
	}
	_, err = kv.Range(ctx, &pb.RangeRequest{Key: odd, Revision: r.Header.Revision + 1000})
	wantCode(t, "a future revision", err, codes.OutOfRange, rpctypes.ErrGRPCFutureRev.Error()[len("rpc error: code = OutOfRange desc = "):])

	// A prefix of keys, with every option of a range.
	for i, k := range []string{"p/c", "p/a", "p/d", "p/b"} {
		if _, err := lkv.Put(ctx, &pb.PutRequest{Key: []byte(k), Value: []byte{byte('z' - i)}}); err != nil {
			t.Fatal(err)
		}
	}
	prefix := &pb.RangeRequest{Key: []byte("p/"), RangeEnd: []byte("p0")}
	all, err := kv.Range(ctx, prefix)
	if err != nil || keysOf(all.Kvs) != "p/a,p/b,p/c,p/d" || all.Count != 4 || all.More {
		t.Fatalf("prefix: %v %v", all, err)
	}
	lim, _ := kv.Range(ctx, &pb.RangeRequest{Key: []byte("p/"), RangeEnd: []byte("p0"), Limit: 2})
	if keysOf(lim.Kvs) != "p/a,p/b" || !lim.More || lim.Count != 4 {
		t.Fatalf("limit 2: %v", lim)
	}
	desc, _ := kv.Range(ctx, &pb.RangeRequest{Key: []byte("p/"), RangeEnd: []byte("p0"), SortOrder: pb.RangeRequest_DESCEND, SortTarget: pb.RangeRequest_CREATE, Limit: 1})
	if keysOf(desc.Kvs) != "p/b" {
		t.Fatalf("last created: %v", desc)
	}
	byValue, _ := kv.Range(ctx, &pb.RangeRequest{Key: []byte("p/"), RangeEnd: []byte("p0"), SortTarget: pb.RangeRequest_VALUE})
	if keysOf(byValue.Kvs) != "p/b,p/d,p/a,p/c" {
		t.Fatalf("by value: %v", byValue)
	}
	created := all.Kvs[2].CreateRevision // p/c's, the first put
	filtered, _ := kv.Range(ctx, &pb.RangeRequest{Key: []byte("p/"), RangeEnd: []byte("p0"), MaxCreateRevision: created, MinModRevision: created})
	if keysOf(filtered.Kvs) != "p/c" || filtered.Count != 4 {
		t.Fatalf("create revision filter: %v", filtered)
	}
	keysOnly, _ := kv.Range(ctx, &pb.RangeRequest{Key: []byte("p/"), RangeEnd: []byte("p0"), KeysOnly: true})
	countOnly, _ := kv.Range(ctx, &pb.RangeRequest{Key: []byte("p/"), RangeEnd: []byte("p0"), CountOnly: true})
	if len(keysOnly.Kvs) != 4 || keysOnly.Kvs[0].Value != nil || countOnly.Count != 4 || len(countOnly.Kvs) != 0 {
		t.Fatalf("keys only %v, count only %v", keysOnly, countOnly)
	}
	from, _ := kv.Range(ctx, &pb.RangeRequest{Key: []byte("p/c"), RangeEnd: []byte{0}})
	if keysOf(from.Kvs) != "p/c,p/d" {
		t.Fatalf("from p/c on: %v", from)
	}
	// A serializable read from the follower's own state, once it has
	// applied the last put.
	servertest.WaitFor(t, 5*time.Second, "the follower's serializable read", func() bool {
		s, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte("p/"), RangeEnd: []byte("p0"), Serializable: true})
		return err == nil && s.Count == 4
	})

	// Transactions: every compare target, both branches.
	ver := func(k string, n int64) *pb.Compare {
		return &pb.Compare{Key: []byte(k), Target: pb.Compare_VERSION, Result: pb.Compare_EQUAL, TargetUnion: &pb.Compare_Version{Version: n}}
	}
	txn, err := kv.Txn(ctx, &pb.TxnRequest{
		Compare: []*pb.Compare{
			ver("p/a", 1),
			{Key: []byte("p/a"), Target: pb.Compare_VALUE, Result: pb.Compare_EQUAL, TargetUnion: &pb.Compare_Value{Value: []byte("y")}},
			{Key: []byte("p/a"), Target: pb.Compare_CREATE, Result: pb.Compare_GREATER, TargetUnion: &pb.Compare_CreateRevision{CreateRevision: created}},
			{Key: []byte("p/a"), Target: pb.Compare_MOD, Result: pb.Compare_LESS, TargetUnion: &pb.Compare_ModRevision{ModRevision: all.Header.Revision + 1}},
			{Key: []byte("p/a"), Target: pb.Compare_LEASE, Result: pb.Compare_EQUAL, TargetUnion: &pb.Compare_Lease{Lease: 0}},
			{Key: []byte("new"), Target: pb.Compare_CREATE, Result: pb.Compare_EQUAL, TargetUnion: &pb.Compare_CreateRevision{CreateRevision: 0}},
		},
		Success: []*pb.RequestOp{
			{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("new"), Value: []byte("n")}}},
			{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte("p/a"), PrevKv: true}}},
			{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("p/"), RangeEnd: []byte("p0"), Limit: 1}}},
		},
		Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("p/a")}}}},
	})
	if err != nil || !txn.Succeeded || len(txn.Responses) != 3 {
		t.Fatalf("txn: %v %v", txn, err)
	}
	if d := txn.Responses[1].GetResponseDeleteRange(); d.Deleted != 1 || string(d.PrevKvs[0].Value) != "y" {
		t.Fatalf("txn delete: %v", d)
	}
	if rr := txn.Responses[2].GetResponseRange(); keysOf(rr.Kvs) != "p/b" || rr.Count != 3 || !rr.More {
		t.Fatalf("txn range: %v", rr)
	}
	failed, err := kv.Txn(ctx, &pb.TxnRequest{Compare: []*pb.Compare{ver("new", 5)},
		Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("new")}}}}})
	if err != nil || failed.Succeeded || string(failed.Responses[0].GetResponseRange().Kvs[0].Value) != "n" {
		t.Fatalf("failed txn: %v %v", failed, err)
	}
	_, err = kv.Txn(ctx, &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{}}}}})
	wantCode(t, "a nested txn", err, codes.Unimplemented, "nested")

	// Delete a range, with the records it deleted.
	del, err := kv.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte("p/"), RangeEnd: []byte("p0"), PrevKv: true})
	if err != nil || del.Deleted != 3 || keysOf(del.PrevKvs) != "p/b,p/c,p/d" {
		t.Fatalf("delete range: %v %v", del, err)
	}
	_, err = kv.Range(ctx, &pb.RangeRequest{})
	wantCode(t, "an empty key", err, codes.InvalidArgument, "key is not provided")

	// Past the history's reach: compacted, never an approximation.
	for i := range kvHistory.MinEvents + 5 {
		if _, err := lkv.Put(ctx, &pb.PutRequest{Key: []byte("churn"), Value: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = kv.Range(ctx, &pb.RangeRequest{Key: odd, Revision: p1.Header.Revision})
	wantCode(t, "a compacted revision", err, codes.OutOfRange, "compacted")
	_, err = kv.Compact(ctx, &pb.CompactionRequest{Revision: p1.Header.Revision})
	wantCode(t, "compact below the history", err, codes.OutOfRange, "compacted")
	now, _ := kv.Range(ctx, &pb.RangeRequest{Key: []byte("churn")})
	if _, err := kv.Compact(ctx, &pb.CompactionRequest{Revision: now.Header.Revision}); err != nil {
		t.Fatalf("compact at the head: %v", err)
	}
	_, err = kv.Compact(ctx, &pb.CompactionRequest{Revision: now.Header.Revision + 1000})
	wantCode(t, "compact in the future", err, codes.OutOfRange, "future")
}

// TestEtcd_Leases: a lease is a session; its keys are ephemeral, kept by
// the keepalive stream (through a follower), gone when it is revoked or
// expires.
func TestEtcd_Leases(t *testing.T) {
	c := servertest.NewWith(t, 3, servertest.ServeEtcd(t))
	leader := c.WaitLeader()
	f := c.Follower(leader)
	ctx := etcdCtx(t)
	conn := etcdConn(t, c.Nodes[f].EtcdAddr())
	kv, ls := pb.NewKVClient(conn), pb.NewLeaseClient(conn)

	g, err := ls.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: 2})
	if err != nil || g.ID <= 0 || g.TTL != 2 {
		t.Fatalf("grant: %v %v", g, err)
	}
	if _, err := kv.Put(ctx, &pb.PutRequest{Key: []byte("eph/a"), Value: []byte("1"), Lease: g.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, &pb.PutRequest{Key: []byte("eph/a"), Value: []byte("2"), IgnoreLease: true}); err != nil {
		t.Fatal(err)
	}
	r, _ := kv.Range(ctx, &pb.RangeRequest{Key: []byte("eph/a")})
	if r.Kvs[0].Lease != g.ID || string(r.Kvs[0].Value) != "2" {
		t.Fatalf("key's lease %d, want %d", r.Kvs[0].Lease, g.ID)
	}
	// The session is lockd's: named after the lease, seen over HTTP too.
	if _, err := c.Nodes[leader].Node().Session(ctx, fmt.Sprintf("etcd-%016x", g.ID), api.ReadOptions{}); err != nil {
		t.Fatalf("the lease's session: %v", err)
	}
	ttl, err := ls.LeaseTimeToLive(ctx, &pb.LeaseTimeToLiveRequest{ID: g.ID, Keys: true})
	if err != nil || ttl.GrantedTTL != 2 || ttl.TTL < 0 || ttl.TTL > 2 || len(ttl.Keys) != 1 || string(ttl.Keys[0]) != "eph/a" {
		t.Fatalf("time to live: %v %v", ttl, err)
	}
	leases, err := ls.LeaseLeases(ctx, &pb.LeaseLeasesRequest{})
	if err != nil || len(leases.Leases) != 1 || leases.Leases[0].ID != g.ID {
		t.Fatalf("leases: %v %v", leases, err)
	}
	// Keep it alive past three TTLs through the follower.
	ka, err := ls.LeaseKeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 8 {
		if err := ka.Send(&pb.LeaseKeepAliveRequest{ID: g.ID}); err != nil {
			t.Fatal(err)
		}
		resp, err := ka.Recv()
		if err != nil || resp.ID != g.ID || resp.TTL != 2 {
			t.Fatalf("keepalive: %v %v", resp, err)
		}
		time.Sleep(700 * time.Millisecond)
	}
	if r, _ := kv.Range(ctx, &pb.RangeRequest{Key: []byte("eph/a")}); len(r.Kvs) != 1 {
		t.Fatal("the kept-alive lease's key is gone")
	}
	// Let it expire: the key goes, a keepalive answers TTL 0, its time to
	// live is -1.
	servertest.WaitFor(t, 10*time.Second, "the lease's key to expire", func() bool {
		r, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte("eph/a")})
		return err == nil && len(r.Kvs) == 0
	})
	if err := ka.Send(&pb.LeaseKeepAliveRequest{ID: g.ID}); err != nil {
		t.Fatal(err)
	}
	if resp, err := ka.Recv(); err != nil || resp.TTL != 0 {
		t.Fatalf("keepalive of an expired lease: %v %v", resp, err)
	}
	_ = ka.CloseSend()
	if ttl, err := ls.LeaseTimeToLive(ctx, &pb.LeaseTimeToLiveRequest{ID: g.ID}); err != nil || ttl.TTL != -1 {
		t.Fatalf("time to live of an expired lease: %v %v", ttl, err)
	}
	_, err = kv.Put(ctx, &pb.PutRequest{Key: []byte("eph/b"), Lease: g.ID})
	wantCode(t, "a put with an expired lease", err, codes.NotFound, "lease not found")

	// Revoke: the keys go in the same entry. A chosen ID is honoured,
	// and refused when in use.
	g2, err := ls.LeaseGrant(ctx, &pb.LeaseGrantRequest{ID: 77, TTL: 30})
	if err != nil || g2.ID != 77 {
		t.Fatalf("grant with an ID: %v %v", g2, err)
	}
	_, err = ls.LeaseGrant(ctx, &pb.LeaseGrantRequest{ID: 77, TTL: 30})
	wantCode(t, "grant of an ID in use", err, codes.FailedPrecondition, "lease already exists")
	for _, k := range []string{"eph/x", "eph/y"} {
		if _, err := kv.Put(ctx, &pb.PutRequest{Key: []byte(k), Lease: 77}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ls.LeaseRevoke(ctx, &pb.LeaseRevokeRequest{ID: 77}); err != nil {
		t.Fatal(err)
	}
	if r, _ := kv.Range(ctx, &pb.RangeRequest{Key: []byte("eph/"), RangeEnd: []byte("eph0")}); len(r.Kvs) != 0 {
		t.Fatalf("keys of a revoked lease: %v", r.Kvs)
	}
	_, err = ls.LeaseRevoke(ctx, &pb.LeaseRevokeRequest{ID: 77})
	wantCode(t, "revoke twice", err, codes.NotFound, "lease not found")
	_, err = ls.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: 100 * 24 * 3600})
	wantCode(t, "a TTL over lockd's longest", err, codes.OutOfRange, "too large lease TTL")
}

// TestEtcd_ACL: with ACLs on, every call needs a valid token, and a
// token's key rules decide what it may read and write, as over HTTP.
func TestEtcd_ACL(t *testing.T) {
	etcd := servertest.ServeEtcd(t)
	c := servertest.NewWith(t, 3, func(i int, cfg *server.Config) {
		cfg.ACL = true
		cfg.Node.ACLBootstrapSecret = bootSecret
		etcd(i, cfg)
	})
	leader := c.WaitLeader()
	servertest.WaitFor(t, 10*time.Second, "the bootstrap token", func() bool {
		_, ok := c.Nodes[leader].Node().ResolveToken(bootSecret)
		return ok
	})
	ctx := etcdCtx(t)
	tok, err := c.Nodes[leader].Node().CreateToken(ctx, api.CreateTokenRequest{Rules: []acl.Rule{
		{Kind: acl.Key, Prefix: "app/", Access: acl.Write}, {Kind: acl.Key, Prefix: "pub/", Access: acl.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	f := c.Follower(leader)
	servertest.WaitFor(t, 10*time.Second, "the token on the follower", func() bool {
		_, ok := c.Nodes[f].Node().ResolveToken(tok.Secret)
		return ok
	})
	with := func(k, v string) context.Context { return metadata.AppendToOutgoingContext(ctx, k, v) }
	for _, node := range []int{leader, f} {
		conn := etcdConn(t, c.Nodes[node].EtcdAddr())
		kv, ls := pb.NewKVClient(conn), pb.NewLeaseClient(conn)
		// No token, a wrong one: Unauthenticated, for every service.
		_, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte("app/a")})
		wantCode(t, "range without a token", err, codes.Unauthenticated, "token")
		_, err = kv.Range(ctx, &pb.RangeRequest{Key: []byte("app/a"), Serializable: true})
		wantCode(t, "serializable range without a token", err, codes.Unauthenticated, "token")
		_, err = kv.Put(with("token", "not-a-secret"), &pb.PutRequest{Key: []byte("app/a")})
		wantCode(t, "put with a wrong token", err, codes.Unauthenticated, "invalid auth token")
		_, err = ls.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: 10})
		wantCode(t, "grant without a token", err, codes.Unauthenticated, "token")
		_, err = ls.LeaseLeases(ctx, &pb.LeaseLeasesRequest{})
		wantCode(t, "leases without a token", err, codes.Unauthenticated, "token")
		_, err = kv.Txn(ctx, &pb.TxnRequest{})
		wantCode(t, "an empty txn without a token", err, codes.Unauthenticated, "token")
		_, err = kv.Compact(with("token", tok.Secret), &pb.CompactionRequest{})
		wantCode(t, "compact by a token that is not an admin's", err, codes.PermissionDenied, "permission denied")

		// The token, as "token" or as "authorization": its rules decide.
		user := with("token", tok.Secret)
		if _, err := kv.Put(user, &pb.PutRequest{Key: []byte("app/a"), Value: []byte("v")}); err != nil {
			t.Fatalf("put under a write rule: %v", err)
		}
		if _, err := kv.Range(with("authorization", "Bearer "+tok.Secret), &pb.RangeRequest{Key: []byte("app/"), RangeEnd: []byte("app0")}); err != nil {
			t.Fatalf("range of the prefix of a rule: %v", err)
		}
		_, err = kv.Put(user, &pb.PutRequest{Key: []byte("pub/a")})
		wantCode(t, "put under a read rule", err, codes.PermissionDenied, "permission denied")
		_, err = kv.Range(user, &pb.RangeRequest{Key: []byte("other")})
		wantCode(t, "range outside every rule", err, codes.PermissionDenied, "permission denied")
		_, err = kv.Range(user, &pb.RangeRequest{Key: []byte("app/"), RangeEnd: []byte{0}})
		wantCode(t, "range past the prefix of a rule", err, codes.PermissionDenied, "permission denied")
		_, err = kv.Txn(user, &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("pub/b")}}}}})
		wantCode(t, "txn put under a read rule", err, codes.PermissionDenied, "permission denied")
		// Its leases are its own: the admin's lease is not.
		mine, err := ls.LeaseGrant(user, &pb.LeaseGrantRequest{TTL: 30})
		if err != nil {
			t.Fatalf("grant by a token with a write rule: %v", err)
		}
		admins, err := ls.LeaseGrant(with("token", bootSecret), &pb.LeaseGrantRequest{TTL: 30})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(user, &pb.PutRequest{Key: []byte("app/e"), Lease: mine.ID}); err != nil {
			t.Fatalf("put with its own lease: %v", err)
		}
		_, err = kv.Put(user, &pb.PutRequest{Key: []byte("app/e"), Lease: admins.ID})
		wantCode(t, "put with another's lease", err, codes.PermissionDenied, "permission denied")
		_, err = ls.LeaseRevoke(user, &pb.LeaseRevokeRequest{ID: admins.ID})
		wantCode(t, "revoke of another's lease", err, codes.PermissionDenied, "permission denied")
		if l, err := ls.LeaseLeases(user, &pb.LeaseLeasesRequest{}); err != nil || len(l.Leases) != 1 || l.Leases[0].ID != mine.ID {
			t.Fatalf("the token's leases: %v %v", l, err)
		}
		for _, id := range []int64{mine.ID, admins.ID} {
			if _, err := ls.LeaseRevoke(with("token", bootSecret), &pb.LeaseRevokeRequest{ID: id}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The keys a token writes through etcd's API count against its limits
	// on keys, as over HTTP.
	small, err := c.Nodes[leader].Node().CreateToken(ctx, api.CreateTokenRequest{MaxKeys: 2,
		Rules: []acl.Rule{{Kind: acl.Key, Prefix: "small/", Access: acl.Write}}})
	if err != nil {
		t.Fatal(err)
	}
	skv := pb.NewKVClient(etcdConn(t, c.Nodes[f].EtcdAddr()))
	for i, k := range []string{"small/a", "small/b", "small/c"} {
		_, err := skv.Put(with("token", small.Secret), &pb.PutRequest{Key: []byte(k)})
		if i < 2 && err != nil {
			t.Fatalf("put %d within max_keys: %v", i, err)
		}
		if i == 2 {
			wantCode(t, "a put past max_keys", err, codes.ResourceExhausted, "max_keys")
		}
	}
	_, err = skv.Txn(with("token", small.Secret), &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("small/d")}}}}})
	wantCode(t, "a txn past max_keys", err, codes.ResourceExhausted, "max_keys")

	// A watch without a token, or outside the token's rules, is canceled
	// as it is created; within them it is served.
	watch := pb.NewWatchClient(etcdConn(t, c.Nodes[f].EtcdAddr()))
	for _, w := range []struct {
		ctx    context.Context
		key    string
		reason string
	}{{ctx, "app/a", "token"}, {with("token", tok.Secret), "other", "permission denied"}, {with("token", tok.Secret), "pub/a", ""}} {
		ws, err := watch.Watch(w.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := ws.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{Key: []byte(w.key)}}}); err != nil {
			t.Fatal(err)
		}
		r := recvWatch(t, ws)
		if !r.Created || r.Canceled != (w.reason != "") || !strings.Contains(r.CancelReason, w.reason) {
			t.Fatalf("watch of %s: %v, want canceled for %q", w.key, r, w.reason)
		}
		_ = ws.CloseSend()
	}
	// Authenticate takes a token's secret as the password and hands it
	// back as the token etcd's clients send.
	auth := pb.NewAuthClient(etcdConn(t, c.Nodes[f].EtcdAddr()))
	a, err := auth.Authenticate(ctx, &pb.AuthenticateRequest{Name: "any", Password: tok.Secret})
	if err != nil || a.Token != tok.Secret {
		t.Fatalf("authenticate: %v %v", a, err)
	}
	_, err = auth.Authenticate(ctx, &pb.AuthenticateRequest{Name: "any", Password: "wrong"})
	wantCode(t, "authenticate with a wrong secret", err, codes.InvalidArgument, "authentication failed")
}

// TestEtcd_KeepAliveStreamEndsWithoutLeader: a keepalive that no leader
// can answer ends the stream with etcd's "no leader", which etcd's
// clients retry.
func TestEtcd_KeepAliveStreamEndsWithoutLeader(t *testing.T) {
	c := servertest.NewWith(t, 3, servertest.ServeEtcd(t))
	leader := c.WaitLeader()
	f := c.Follower(leader)
	ctx := etcdCtx(t)
	ls := pb.NewLeaseClient(etcdConn(t, c.Nodes[f].EtcdAddr()))
	g, err := ls.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: 30})
	if err != nil {
		t.Fatal(err)
	}
	c.Isolate(f)
	defer c.Heal(f)
	ka, err := ls.LeaseKeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var resp *pb.LeaseKeepAliveResponse
	servertest.WaitFor(t, 15*time.Second, "the stream to end", func() bool {
		if err = ka.Send(&pb.LeaseKeepAliveRequest{ID: g.ID}); err == nil {
			resp, err = ka.Recv()
		}
		return err != nil
	})
	if errors.Is(err, io.EOF) || status.Code(err) != codes.Unavailable {
		t.Fatalf("keepalive of an isolated follower: %v %v", resp, err)
	}
}

// TestEtcd_TLSAndClientCertificates: etcd's port serves TLS with the HTTP
// port's certificate and requires the same client certificates: a plain
// client and a client without a certificate are refused, one with the
// cluster's client certificate is served.
func TestEtcd_TLSAndClientCertificates(t *testing.T) {
	dir := t.TempDir()
	if _, err := certs.Init(dir, []string{"n1"}, []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	file := func(name string) string { return filepath.Join(dir, name) }
	etcd := servertest.ServeEtcd(t)
	c := servertest.NewWith(t, 1, func(i int, cfg *server.Config) {
		cert, key := certs.NodeFiles("n1")
		var err error
		if cfg.HTTPTLS, err = certs.ServerTLS(file(cert), file(key), file(certs.CAFile)); err != nil {
			t.Fatal(err)
		}
		etcd(i, cfg)
	})
	addr := c.Nodes[0].EtcdAddr()
	ctx := etcdCtx(t)
	put := func(creds credentials.TransportCredentials) error {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = conn.Close() }()
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err = pb.NewKVClient(conn).Put(cctx, &pb.PutRequest{Key: []byte("k"), Value: []byte("v")})
		return err
	}
	if err := put(insecure.NewCredentials()); err == nil {
		t.Fatal("a plain-text client was served")
	}
	noCert, err := certs.ClientTLS(file(certs.CAFile), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := put(credentials.NewTLS(noCert)); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	withCert, err := certs.ClientTLS(file(certs.CAFile), file(certs.ClientFile), file(certs.ClientKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := put(credentials.NewTLS(withCert)); err != nil {
		t.Fatalf("a client with the cluster's client certificate: %v", err)
	}
}

// TestEtcd_WritesWaitThroughAnElection: a write sent through a follower
// while it knows no leader (the leader died, the election is under way)
// is held until a new leader is known and then applied, as etcd holds it,
// rather than answered "no leader" (which etcd's clients do not retry for
// writes).
func TestEtcd_WritesWaitThroughAnElection(t *testing.T) {
	c := servertest.NewWith(t, 3, servertest.ServeEtcd(t))
	leader := c.WaitLeader()
	old := fmt.Sprintf("n%d", leader+1)
	survivor := (leader + 1) % 3
	node := c.Nodes[survivor].Node()
	kv := pb.NewKVClient(etcdConn(t, c.Nodes[survivor].EtcdAddr()))
	ctx := etcdCtx(t)
	if _, err := kv.Put(ctx, &pb.PutRequest{Key: []byte("before"), Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	c.Crash(leader)
	during := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		isLeader, to := node.Leader()
		if isLeader || (to.ID != "" && to.ID != old) {
			break // a new leader is known
		}
		if to.Peer != "" {
			time.Sleep(time.Millisecond) // it still follows the dead leader
			continue
		}
		during++
		if _, err := kv.Put(ctx, &pb.PutRequest{Key: fmt.Appendf(nil, "during-%d", during), Value: []byte("v")}); err != nil {
			t.Fatalf("put sent while no leader was known: %v", err)
		}
	}
	if during == 0 {
		t.Fatal("the follower never was without a leader: the test saw no election")
	}
	r, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte("during-"), RangeEnd: []byte("during."), CountOnly: true})
	if err != nil || r.Count != int64(during) {
		t.Fatalf("after the election: %v %v, want %d keys", r, err, during)
	}
}

// TestEtcd_RateLimitPerClient: with a rate limit, a client's unary calls
// past its burst are refused with etcd's "too many requests" and nothing
// is written; its keep-alive stream is slowed to the rate, never broken.
func TestEtcd_RateLimitPerClient(t *testing.T) {
	etcd := servertest.ServeEtcd(t)
	c := servertest.NewWith(t, 1, func(i int, cfg *server.Config) {
		cfg.RateLimit = httpapi.RateLimit{Rate: 20, Burst: 5}
		etcd(i, cfg)
	})
	c.WaitLeader()
	conn := etcdConn(t, c.EtcdAddrs()[0])
	kv, lease := pb.NewKVClient(conn), pb.NewLeaseClient(conn)
	ctx := etcdCtx(t)
	refused, ok := 0, 0
	for i := range 40 {
		_, err := kv.Put(ctx, &pb.PutRequest{Key: fmt.Appendf(nil, "rate-%d", i), Value: []byte("v")})
		switch {
		case err == nil:
			ok++
		case status.Convert(err).Message() == "etcdserver: too many requests" && status.Code(err) == codes.ResourceExhausted:
			refused++
		default:
			t.Fatalf("put %d: %v", i, err)
		}
	}
	if refused == 0 || ok < 5 {
		t.Fatalf("40 puts at once: %d ok, %d refused; want the burst of 5 ok and some refused", ok, refused)
	}
	time.Sleep(time.Second) // the bucket refills
	r, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte("rate-"), RangeEnd: []byte("rate."), CountOnly: true})
	if err != nil || r.Count != int64(ok) {
		t.Fatalf("%d puts answered ok, %v keys (%v)", ok, r, err)
	}
	g, err := lease.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: 30})
	if err != nil {
		t.Fatal(err)
	}
	ka, err := lease.LeaseKeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 30 {
		if err := ka.Send(&pb.LeaseKeepAliveRequest{ID: g.ID}); err != nil {
			t.Fatalf("keep-alive %d: %v", i, err)
		}
		if r, err := ka.Recv(); err != nil || r.TTL <= 0 {
			t.Fatalf("keep-alive %d: %v %v", i, r, err)
		}
	}
	// 30 messages at 20/s after a burst of 5 take at least about 1.2 s.
	if d := time.Since(start); d < time.Second {
		t.Fatalf("30 keep-alives in %v: not slowed to the rate", d)
	}
}

// TestEtcd_MoveLeader: MoveLeader through a follower hands leadership to
// the member of that ID (MemberList's); an ID of no member is etcd's "bad
// leader transferee"; Status gives the Raft term.
func TestEtcd_MoveLeader(t *testing.T) {
	c := servertest.NewWith(t, 3, servertest.ServeEtcd(t))
	leader := c.WaitLeader()
	follower := (leader + 1) % 3
	target := (leader + 2) % 3
	ctx := etcdCtx(t)
	conn := etcdConn(t, c.Nodes[follower].EtcdAddr())
	mt := pb.NewMaintenanceClient(conn)
	st, err := mt.Status(ctx, &pb.StatusRequest{})
	if err != nil || st.RaftTerm == 0 {
		t.Fatalf("status: %v %v", st, err)
	}
	ml, err := pb.NewClusterClient(conn).MemberList(ctx, &pb.MemberListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var id uint64
	for _, m := range ml.Members {
		if m.Name == fmt.Sprintf("n%d", target+1) {
			id = m.ID
		}
	}
	_, err = mt.MoveLeader(ctx, &pb.MoveLeaderRequest{TargetID: id + 1})
	wantCode(t, "move to no member", err, codes.FailedPrecondition, "bad leader transferee")
	if _, err := mt.MoveLeader(ctx, &pb.MoveLeaderRequest{TargetID: id}); err != nil {
		t.Fatalf("move leader through a follower: %v", err)
	}
	servertest.WaitFor(t, 10*time.Second, "the target leading", func() bool { return c.WaitLeader() == target })
	if st2, err := mt.Status(ctx, &pb.StatusRequest{}); err != nil || st2.RaftTerm <= st.RaftTerm || st2.Leader != id {
		t.Fatalf("status after the move: %v %v (term before %d, target %x)", st2, err, st.RaftTerm, id)
	}
}
