package server_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3election/v3electionpb"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3lock/v3lockpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockd/lockd/test/servertest"
)

// etcdCall is one unary call of etcd's API that FuzzEtcdRequests can
// make: it decodes the request from the fuzzer's bytes (etcd's own
// protobuf decoding, as the gRPC server would) and sends it.
type etcdCall struct {
	name string
	send func(ctx context.Context, conn *grpc.ClientConn, b []byte) (bool, error)
}

// unary returns an etcdCall that decodes a request of type Req and sends
// it with call.
func unary[Req any, PReq interface {
	*Req
	Unmarshal([]byte) error
}, Resp any](name string, call func(*grpc.ClientConn) func(context.Context, PReq, ...grpc.CallOption) (Resp, error)) etcdCall {
	return etcdCall{name, func(ctx context.Context, conn *grpc.ClientConn, b []byte) (bool, error) {
		var req Req
		if PReq(&req).Unmarshal(b) != nil {
			return false, nil
		}
		_, err := call(conn)(ctx, &req)
		return true, err
	}}
}

var etcdCalls = []etcdCall{
	unary[pb.RangeRequest]("Range", func(c *grpc.ClientConn) func(context.Context, *pb.RangeRequest, ...grpc.CallOption) (*pb.RangeResponse, error) {
		return pb.NewKVClient(c).Range
	}),
	unary[pb.PutRequest]("Put", func(c *grpc.ClientConn) func(context.Context, *pb.PutRequest, ...grpc.CallOption) (*pb.PutResponse, error) {
		return pb.NewKVClient(c).Put
	}),
	unary[pb.DeleteRangeRequest]("DeleteRange", func(c *grpc.ClientConn) func(context.Context, *pb.DeleteRangeRequest, ...grpc.CallOption) (*pb.DeleteRangeResponse, error) {
		return pb.NewKVClient(c).DeleteRange
	}),
	unary[pb.TxnRequest]("Txn", func(c *grpc.ClientConn) func(context.Context, *pb.TxnRequest, ...grpc.CallOption) (*pb.TxnResponse, error) {
		return pb.NewKVClient(c).Txn
	}),
	unary[pb.CompactionRequest]("Compact", func(c *grpc.ClientConn) func(context.Context, *pb.CompactionRequest, ...grpc.CallOption) (*pb.CompactionResponse, error) {
		return pb.NewKVClient(c).Compact
	}),
	unary[pb.LeaseGrantRequest]("LeaseGrant", func(c *grpc.ClientConn) func(context.Context, *pb.LeaseGrantRequest, ...grpc.CallOption) (*pb.LeaseGrantResponse, error) {
		return pb.NewLeaseClient(c).LeaseGrant
	}),
	unary[pb.LeaseRevokeRequest]("LeaseRevoke", func(c *grpc.ClientConn) func(context.Context, *pb.LeaseRevokeRequest, ...grpc.CallOption) (*pb.LeaseRevokeResponse, error) {
		return pb.NewLeaseClient(c).LeaseRevoke
	}),
	unary[pb.LeaseTimeToLiveRequest]("LeaseTimeToLive", func(c *grpc.ClientConn) func(context.Context, *pb.LeaseTimeToLiveRequest, ...grpc.CallOption) (*pb.LeaseTimeToLiveResponse, error) {
		return pb.NewLeaseClient(c).LeaseTimeToLive
	}),
	unary[v3lockpb.LockRequest]("Lock", func(c *grpc.ClientConn) func(context.Context, *v3lockpb.LockRequest, ...grpc.CallOption) (*v3lockpb.LockResponse, error) {
		return v3lockpb.NewLockClient(c).Lock
	}),
	unary[v3lockpb.UnlockRequest]("Unlock", func(c *grpc.ClientConn) func(context.Context, *v3lockpb.UnlockRequest, ...grpc.CallOption) (*v3lockpb.UnlockResponse, error) {
		return v3lockpb.NewLockClient(c).Unlock
	}),
	unary[v3electionpb.CampaignRequest]("Campaign", func(c *grpc.ClientConn) func(context.Context, *v3electionpb.CampaignRequest, ...grpc.CallOption) (*v3electionpb.CampaignResponse, error) {
		return v3electionpb.NewElectionClient(c).Campaign
	}),
	unary[v3electionpb.ProclaimRequest]("Proclaim", func(c *grpc.ClientConn) func(context.Context, *v3electionpb.ProclaimRequest, ...grpc.CallOption) (*v3electionpb.ProclaimResponse, error) {
		return v3electionpb.NewElectionClient(c).Proclaim
	}),
	unary[v3electionpb.LeaderRequest]("Leader", func(c *grpc.ClientConn) func(context.Context, *v3electionpb.LeaderRequest, ...grpc.CallOption) (*v3electionpb.LeaderResponse, error) {
		return v3electionpb.NewElectionClient(c).Leader
	}),
	unary[v3electionpb.ResignRequest]("Resign", func(c *grpc.ClientConn) func(context.Context, *v3electionpb.ResignRequest, ...grpc.CallOption) (*v3electionpb.ResignResponse, error) {
		return v3electionpb.NewElectionClient(c).Resign
	}),
}

// recipeErrors are the answers of etcd's Lock and Election services that
// it sends as code Unknown with its concurrency package's text, which
// lockd sends as they are (etcdapi/recipes.go).
var recipeErrors = map[string]bool{
	"election: not leader": true, "election: no leader": true,
	"mutex: session is expired": true, `"leader" field must be provided`: true,
}

// etcdAnswers are the codes a call may end with on a healthy one-node
// cluster, whatever its request: success, the request refused for what it
// asks (etcd's own codes for those), or the fuzzer's deadline on a call
// that waits (a lock that is held, a campaign). Unknown and Internal mean
// an error lockd did not translate; Unavailable, that a healthy node
// answered as if it had no leader.
var etcdAnswers = map[codes.Code]bool{
	codes.OK: true, codes.InvalidArgument: true, codes.OutOfRange: true, codes.NotFound: true,
	codes.FailedPrecondition: true, codes.ResourceExhausted: true, codes.DeadlineExceeded: true,
	codes.Unimplemented: true,
}

// FuzzEtcdRequests sends the requests of etcd's API decoded from arbitrary
// bytes to a one-node cluster that serves it: the first byte picks the call,
// the rest is its request. A handler that panics answers Internal (the
// server's recovery), which is no answer etcdAnswers allows; each answer
// must be one of etcdAnswers (or a recipe's
// error as etcd words it), and after it the
// node must still answer a write and a read of its own.
func FuzzEtcdRequests(f *testing.F) {
	seed := func(i int, m interface{ Marshal() ([]byte, error) }) {
		b, err := m.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte{byte(i)}, b...))
	}
	seed(0, &pb.RangeRequest{Key: []byte("a"), RangeEnd: []byte{0}, Limit: 3, SortOrder: pb.RangeRequest_DESCEND, SortTarget: pb.RangeRequest_MOD})
	seed(0, &pb.RangeRequest{Key: []byte("z"), RangeEnd: []byte("a"), Revision: 1 << 40})
	seed(1, &pb.PutRequest{Key: []byte("k"), Value: []byte("v"), Lease: 7, PrevKv: true, IgnoreValue: true})
	seed(2, &pb.DeleteRangeRequest{Key: []byte{0}, RangeEnd: []byte{0}, PrevKv: true})
	seed(3, &pb.TxnRequest{
		Compare: []*pb.Compare{
			{Key: []byte("k"), Target: pb.Compare_VERSION, Result: pb.Compare_GREATER, TargetUnion: &pb.Compare_Version{Version: -1}},
			{Key: []byte("k"), RangeEnd: []byte("l"), Target: pb.Compare_LEASE, TargetUnion: &pb.Compare_Lease{Lease: 1}},
			{Key: []byte("k"), Target: pb.Compare_VALUE},
		},
		Success: []*pb.RequestOp{
			{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("k"), Value: []byte("w")}}},
			{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{Success: []*pb.RequestOp{{}}}}},
		},
		Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte("k")}}}},
	})
	seed(4, &pb.CompactionRequest{Revision: 1 << 50, Physical: true})
	seed(5, &pb.LeaseGrantRequest{TTL: -5, ID: -1})
	seed(6, &pb.LeaseRevokeRequest{ID: 0})
	seed(7, &pb.LeaseTimeToLiveRequest{ID: 1 << 62, Keys: true})
	seed(8, &v3lockpb.LockRequest{Name: []byte("l"), Lease: 3})
	seed(9, &v3lockpb.UnlockRequest{Key: []byte("l/abc")})
	seed(10, &v3electionpb.CampaignRequest{Name: []byte("e"), Lease: 1, Value: []byte("x")})
	seed(11, &v3electionpb.ProclaimRequest{Leader: &v3electionpb.LeaderKey{Name: []byte("e"), Key: []byte("e/1"), Rev: 1, Lease: 1}})
	seed(12, &v3electionpb.LeaderRequest{Name: []byte{}})
	seed(13, &v3electionpb.ResignRequest{Leader: &v3electionpb.LeaderKey{}})
	f.Add([]byte{1, 0x0a, 0x00})

	c := servertest.NewWith(f, 1, servertest.ServeEtcd(f))
	conn := etcdConn(f, c.EtcdAddrs()[0])
	kv := pb.NewKVClient(conn)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		call := etcdCalls[int(b[0])%len(etcdCalls)]
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		sent, err := call.send(ctx, conn, b[1:])
		if !sent {
			return
		}
		if code := status.Code(err); !etcdAnswers[code] && !(code == codes.Unknown && recipeErrors[status.Convert(err).Message()]) {
			t.Fatalf("%s: %v (code %v)", call.name, err, code)
		}
		// The node still serves: a put of its own and a read of it.
		probe := binary.BigEndian.AppendUint64([]byte("\xff\xfeprobe/"), uint64(time.Now().UnixNano()))
		pctx, pcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer pcancel()
		if _, err := kv.Put(pctx, &pb.PutRequest{Key: probe, Value: []byte("ok")}); err != nil {
			t.Fatalf("after %s (%v): a put fails: %v", call.name, err, err)
		}
		r, err := kv.Range(pctx, &pb.RangeRequest{Key: probe})
		if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "ok" || r.Kvs[0].Version != 1 {
			t.Fatalf("after %s: the probe's read: %v %v", call.name, r, err)
		}
	})
}
