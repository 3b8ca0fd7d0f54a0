package etcdapi

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/fsm"
)

// Names of the calls, as gRPC names them (and the forwarded paths).
const (
	mRange     = "/etcdserverpb.KV/Range"
	mPut       = "/etcdserverpb.KV/Put"
	mDelete    = "/etcdserverpb.KV/DeleteRange"
	mTxn       = "/etcdserverpb.KV/Txn"
	mCompact   = "/etcdserverpb.KV/Compact"
	mGrant     = "/etcdserverpb.Lease/LeaseGrant"
	mRevoke    = "/etcdserverpb.Lease/LeaseRevoke"
	mKeepAlive = "/etcdserverpb.Lease/LeaseKeepAlive"
	mTTL       = "/etcdserverpb.Lease/LeaseTimeToLive"
	mLeases    = "/etcdserverpb.Lease/LeaseLeases"
	mMove      = "/etcdserverpb.Maintenance/MoveLeader"
)

func (s *Server) methodTable() map[string]method {
	return map[string]method{
		mRange:     methodOf(s.rangeLocal),
		mPut:       methodOf(s.putLocal),
		mDelete:    methodOf(s.deleteLocal),
		mTxn:       methodOf(s.txnLocal),
		mCompact:   methodOf(s.compactLocal),
		mGrant:     methodOf(s.grantLocal),
		mRevoke:    methodOf(s.revokeLocal),
		mKeepAlive: methodOf(s.keepAliveLocal),
		mTTL:       methodOf(s.timeToLiveLocal),
		mLeases:    methodOf(s.leasesLocal),
		mMove:      methodOf(s.moveLeaderLocal),
	}
}

// kvServer is etcd's KV service.
type kvServer struct{ s *Server }

func (k kvServer) Range(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	return invoke(ctx, k.s, mRange, r, !r.Serializable, k.s.rangeLocal)
}

func (k kvServer) Put(ctx context.Context, r *pb.PutRequest) (*pb.PutResponse, error) {
	return invoke(ctx, k.s, mPut, r, true, k.s.putLocal)
}

func (k kvServer) DeleteRange(ctx context.Context, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	return invoke(ctx, k.s, mDelete, r, true, k.s.deleteLocal)
}

func (k kvServer) Txn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	return invoke(ctx, k.s, mTxn, r, !serializableTxn(r), k.s.txnLocal)
}

// readOnly reports whether a transaction only reads: it is then answered
// as a read, without a Raft entry, as etcd answers one.
func readOnly(r *pb.TxnRequest) bool {
	for _, op := range slices.Concat(r.Success, r.Failure) {
		if op.GetRequestRange() == nil {
			return false
		}
	}
	return true
}

// serializableTxn reports whether a transaction only reads, every read
// serializable: then any node answers it from its own state.
func serializableTxn(r *pb.TxnRequest) bool {
	if !readOnly(r) || len(r.Success)+len(r.Failure) == 0 {
		return false
	}
	for _, op := range slices.Concat(r.Success, r.Failure) {
		if !op.GetRequestRange().Serializable {
			return false
		}
	}
	return true
}

func (k kvServer) Compact(ctx context.Context, r *pb.CompactionRequest) (*pb.CompactionResponse, error) {
	return invoke(ctx, k.s, mCompact, r, true, k.s.compactLocal)
}

// keyRange checks a request's key and range_end: a key alone (end
// empty), the keys in [key, end), or every key from key on (end "\x00";
// etcd's clients send key "\x00" with it for every key).
func keyRange(key, end []byte) error {
	if len(key) == 0 && len(end) == 0 {
		return rpctypes.ErrGRPCEmptyKey
	}
	if len(key) > fsm.MaxKeyLen || len(end) > fsm.MaxKeyLen {
		return status.Errorf(codes.InvalidArgument, "a key or range_end of more than %d bytes: lockd's keys are at most that long", fsm.MaxKeyLen)
	}
	return nil
}

func (s *Server) rangeLocal(ctx context.Context, c *call, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	if err := checkRange(r); err != nil {
		return nil, err
	}
	if r.Revision < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "revision %d is negative", r.Revision)
	}
	if err := s.allowKeys(c, r.Key, r.RangeEnd, acl.Read); err != nil {
		return nil, err
	}
	if r.Serializable && r.Revision > 0 {
		s.waitApplied(ctx, uint64(r.Revision))
	}
	if firstInKeyOrder(r) {
		return s.rangeFirst(ctx, r)
	}
	var kvs []fsm.KV
	var applied uint64
	var rerr error
	err := s.b.ReadNamespace(ctx, r.Serializable, func() {
		kvs, applied, rerr = s.b.FSM().RangeAt(r.Key, r.RangeEnd, uint64(max(r.Revision, 0)), r.KeysOnly || r.CountOnly)
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return nil, err
	}
	out := shapeRange(kvs, r)
	out.Header = s.header(applied)
	return out, nil
}

// firstInKeyOrder reports whether r asks for the first keys of its range
// as they are now, in key order, with no revision filter: the common read
// (a key, a prefix, a page of one), which rangeFirst answers copying only
// the records it returns.
func firstInKeyOrder(r *pb.RangeRequest) bool {
	return r.Revision == 0 && r.MinModRevision == 0 && r.MaxModRevision == 0 && r.MinCreateRevision == 0 && r.MaxCreateRevision == 0 &&
		r.SortTarget == pb.RangeRequest_KEY && (r.SortOrder == pb.RangeRequest_NONE || r.SortOrder == pb.RangeRequest_ASCEND)
}

// rangeFirst answers a firstInKeyOrder read: count is the whole range's,
// the records the first limit.
func (s *Server) rangeFirst(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	var kvs []fsm.KV
	var count int
	var applied uint64
	err := s.b.ReadNamespace(ctx, r.Serializable, func() {
		kvs, count, applied = s.b.FSM().RangeFirst(r.Key, r.RangeEnd, int(min(r.Limit, math.MaxInt32)), r.KeysOnly, r.CountOnly)
	})
	if err != nil {
		return nil, err
	}
	out := &pb.RangeResponse{Header: s.header(applied), Count: int64(count), More: !r.CountOnly && count > len(kvs)}
	if !r.CountOnly {
		out.Kvs = make([]*mvccpb.KeyValue, 0, len(kvs))
		for _, kv := range kvs {
			out.Kvs = append(out.Kvs, keyValue(kv))
		}
	}
	return out, nil
}

// catchUp bounds how long a serializable read at a revision this node
// has not applied yet waits for it. A client that read a revision from
// one node (the leader, say) and asks another for it finds that node a
// little behind at most; past the bound the read is refused as etcd
// refuses it, ErrFutureRev.
const catchUp = time.Second

// waitApplied waits until the node has applied entry rev, for up to
// catchUp.
func (s *Server) waitApplied(ctx context.Context, rev uint64) {
	f := s.b.FSM()
	timer := time.NewTimer(catchUp)
	defer timer.Stop()
	for {
		changed, stop := f.Watch(fsm.AppliedTopic())
		if f.AppliedIndex() >= rev {
			stop()
			return
		}
		select {
		case <-changed:
			stop()
		case <-timer.C:
			stop()
			return
		case <-ctx.Done():
			stop()
			return
		}
	}
}

// checkRange checks a range request's key and options.
func checkRange(r *pb.RangeRequest) error {
	if err := keyRange(r.Key, r.RangeEnd); err != nil {
		return err
	}
	if _, ok := pb.RangeRequest_SortOrder_name[int32(r.SortOrder)]; !ok {
		return rpctypes.ErrGRPCInvalidSortOption
	}
	if _, ok := pb.RangeRequest_SortTarget_name[int32(r.SortTarget)]; !ok {
		return rpctypes.ErrGRPCInvalidSortOption
	}
	return nil
}

// shapeRange makes the answer to r from every key of its range, in key
// order, as etcd does: count is the range's number of keys; the revision
// filters, then the sort, then the limit apply to what is listed.
func shapeRange(kvs []fsm.KV, r *pb.RangeRequest) *pb.RangeResponse {
	out := &pb.RangeResponse{Count: int64(len(kvs))}
	if r.CountOnly {
		return out
	}
	kept := kvs[:0:0]
	for _, kv := range kvs {
		mod, create := revision(kv.ModifyIndex), revision(kv.CreateIndex)
		switch {
		case r.MinModRevision > 0 && mod < r.MinModRevision,
			r.MaxModRevision > 0 && mod > r.MaxModRevision,
			r.MinCreateRevision > 0 && create < r.MinCreateRevision,
			r.MaxCreateRevision > 0 && create > r.MaxCreateRevision:
			continue
		}
		kept = append(kept, kv)
	}
	order := r.SortOrder
	if order == pb.RangeRequest_NONE && r.SortTarget != pb.RangeRequest_KEY {
		order = pb.RangeRequest_ASCEND
	}
	if order != pb.RangeRequest_NONE {
		by := func(a, b fsm.KV) int {
			switch r.SortTarget {
			case pb.RangeRequest_VERSION:
				return cmp.Compare(a.Version, b.Version)
			case pb.RangeRequest_CREATE:
				return cmp.Compare(a.CreateIndex, b.CreateIndex)
			case pb.RangeRequest_MOD:
				return cmp.Compare(a.ModifyIndex, b.ModifyIndex)
			case pb.RangeRequest_VALUE:
				return bytes.Compare(a.Value, b.Value)
			}
			return bytes.Compare(a.Key, b.Key)
		}
		if order == pb.RangeRequest_DESCEND {
			slices.SortStableFunc(kept, func(a, b fsm.KV) int { return by(b, a) })
		} else {
			slices.SortStableFunc(kept, by)
		}
	}
	if r.Limit > 0 && int64(len(kept)) > r.Limit {
		kept, out.More = kept[:r.Limit], true
	}
	out.Kvs = make([]*mvccpb.KeyValue, 0, len(kept))
	for _, kv := range kept {
		out.Kvs = append(out.Kvs, keyValue(kv))
	}
	return out
}

// revision converts a Raft index (or a version) to etcd's int64. Raft
// indexes do not reach 2^63; were one to, it would read as the largest.
func revision(n uint64) int64 {
	if n > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(n)
}

// keyValue is a record as etcd's clients read it.
func keyValue(kv fsm.KV) *mvccpb.KeyValue {
	return &mvccpb.KeyValue{Key: kv.Key, Value: kv.Value, CreateRevision: revision(kv.CreateIndex), ModRevision: revision(kv.ModifyIndex),
		Version: revision(kv.Version), Lease: leaseOf(kv.Session)}
}

func keyValuePtr(kv *fsm.KV) *mvccpb.KeyValue {
	if kv == nil {
		return nil
	}
	return keyValue(*kv)
}

// putOp is the transaction's operation of a put, checked.
func (s *Server) putOp(c *call, r *pb.PutRequest) (fsm.TxnOp, error) {
	if err := keyRange(r.Key, nil); err != nil {
		return fsm.TxnOp{}, err
	}
	switch {
	case r.IgnoreValue && len(r.Value) > 0:
		return fsm.TxnOp{}, rpctypes.ErrGRPCValueProvided
	case r.IgnoreLease && r.Lease != 0:
		return fsm.TxnOp{}, rpctypes.ErrGRPCLeaseProvided
	case r.Lease < 0:
		return fsm.TxnOp{}, rpctypes.ErrGRPCLeaseNotFound
	}
	if err := s.allowKeys(c, r.Key, nil, acl.Write); err != nil {
		return fsm.TxnOp{}, err
	}
	op := fsm.Put(r.Key, r.Value)
	if r.Lease != 0 {
		op.Session = sessionOf(r.Lease)
		if err := s.ownSession(c, op.Session); err != nil {
			return fsm.TxnOp{}, err
		}
	}
	return op, nil
}

// keepTries bounds the attempts of a put with ignore_value or
// ignore_lease that other writes of its key keep overtaking.
const keepTries = 10

func (s *Server) putLocal(ctx context.Context, c *call, r *pb.PutRequest) (*pb.PutResponse, error) {
	op, err := s.putOp(c, r)
	if err != nil {
		return nil, err
	}
	owner, err := s.owner(c)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("an etcd put of key %q", r.Key)
	t := &fsm.Txn{Success: []fsm.TxnOp{op}}
	var res *fsm.TxnResult
	var index uint64
	for try := 0; ; try++ {
		if r.IgnoreValue || r.IgnoreLease {
			// Keep the key's value or lease: a put of what the key holds
			// now, applied only if it still holds it (its mod revision).
			cur, ok := s.b.FSM().Get(r.Key)
			if !ok {
				return nil, rpctypes.ErrGRPCKeyNotFound
			}
			if r.IgnoreValue {
				op.Value = cur.Value
			}
			if r.IgnoreLease {
				op.Session = cur.Session
			}
			t = &fsm.Txn{Compare: []fsm.Compare{fsm.CAS(r.Key, cur.ModifyIndex)}, Success: []fsm.TxnOp{op}}
		}
		if res, index, err = s.b.CommitTxn(ctx, owner, t, what); err != nil {
			return nil, err
		}
		if res.Succeeded {
			break
		}
		if try == keepTries {
			return nil, status.Errorf(codes.Aborted, "%s: other writes of the key changed it %d times while the put kept its value or lease; nothing was applied: retry", what, keepTries+1)
		}
	}
	out := &pb.PutResponse{Header: s.header(index)}
	if r.PrevKv {
		out.PrevKv = keyValuePtr(res.Results[0].Prev)
	}
	return out, nil
}

// deleteOp is the transaction's operation of a delete, checked.
func (s *Server) deleteOp(c *call, r *pb.DeleteRangeRequest) (fsm.TxnOp, error) {
	if err := keyRange(r.Key, r.RangeEnd); err != nil {
		return fsm.TxnOp{}, err
	}
	if err := s.allowKeys(c, r.Key, r.RangeEnd, acl.Write); err != nil {
		return fsm.TxnOp{}, err
	}
	return fsm.TxnOp{Type: fsm.TxnDelete, Key: r.Key, End: r.RangeEnd}, nil
}

func (s *Server) deleteLocal(ctx context.Context, c *call, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	op, err := s.deleteOp(c, r)
	if err != nil {
		return nil, err
	}
	owner, err := s.owner(c)
	if err != nil {
		return nil, err
	}
	res, index, err := s.b.CommitTxn(ctx, owner, &fsm.Txn{Success: []fsm.TxnOp{op}}, fmt.Sprintf("an etcd delete of key %q", r.Key))
	if err != nil {
		return nil, err
	}
	return deleteResponse(s.header(index), res.Results[0], r.PrevKv), nil
}

func deleteResponse(h *pb.ResponseHeader, res fsm.OpResult, prev bool) *pb.DeleteRangeResponse {
	out := &pb.DeleteRangeResponse{Header: h, Deleted: int64(res.Count)}
	if prev {
		for _, kv := range res.KVs {
			out.PrevKvs = append(out.PrevKvs, keyValue(kv))
		}
	}
	return out
}

// compareOf translates a compare of etcd's onto the state machine's.
func (s *Server) compareOf(c *call, x *pb.Compare) (fsm.Compare, error) {
	if len(x.RangeEnd) > 0 {
		return fsm.Compare{}, status.Error(codes.Unimplemented, "lockd does not serve a compare over a range of keys (range_end) yet: compare single keys (docs/etcd.md)")
	}
	if err := keyRange(x.Key, nil); err != nil {
		return fsm.Compare{}, err
	}
	if err := s.allowKeys(c, x.Key, nil, acl.Read); err != nil {
		return fsm.Compare{}, err
	}
	out := fsm.Compare{Key: x.Key}
	switch x.Result {
	case pb.Compare_EQUAL:
		out.Op = fsm.Equal
	case pb.Compare_NOT_EQUAL:
		out.Op = fsm.NotEqual
	case pb.Compare_LESS:
		out.Op = fsm.Less
	case pb.Compare_GREATER:
		out.Op = fsm.Greater
	default:
		return fsm.Compare{}, status.Errorf(codes.InvalidArgument, "compare result %d", x.Result)
	}
	number := func(n int64) (uint64, error) {
		if n < 0 {
			return 0, status.Errorf(codes.InvalidArgument, "a compare with the negative number %d: lockd compares revisions, versions and leases from 0 up", n)
		}
		return uint64(n), nil
	}
	var err error
	switch x.Target {
	case pb.Compare_VERSION:
		out.Target = fsm.TargetVersion
		out.Number, err = number(x.GetVersion())
	case pb.Compare_CREATE:
		out.Target = fsm.TargetCreate
		out.Number, err = number(x.GetCreateRevision())
	case pb.Compare_MOD:
		out.Target = fsm.TargetModify
		out.Number, err = number(x.GetModRevision())
	case pb.Compare_VALUE:
		out.Target = fsm.TargetValue
		out.Value = x.GetValue()
	case pb.Compare_LEASE:
		// Session ids of leases sort as the lease IDs do, and "" (no
		// lease, 0) before them all.
		out.Target = fsm.TargetSession
		if _, err = number(x.GetLease()); err == nil && x.GetLease() != 0 {
			out.Session = sessionOf(x.GetLease())
		}
	default:
		return fsm.Compare{}, status.Errorf(codes.InvalidArgument, "compare target %d", x.Target)
	}
	return out, err
}

// opsOf translates a branch of a transaction.
func (s *Server) opsOf(c *call, ops []*pb.RequestOp) ([]fsm.TxnOp, error) {
	out := make([]fsm.TxnOp, 0, len(ops))
	for _, op := range ops {
		var o fsm.TxnOp
		var err error
		switch {
		case op.GetRequestRange() != nil:
			r := op.GetRequestRange()
			if err = checkRange(r); err == nil && r.Revision < 0 {
				err = status.Errorf(codes.InvalidArgument, "revision %d is negative", r.Revision)
			}
			if err == nil {
				err = s.allowKeys(c, r.Key, r.RangeEnd, acl.Read)
			}
			o = fsm.TxnOp{Type: fsm.TxnGet, Key: r.Key, End: r.RangeEnd, KeysOnly: r.KeysOnly || r.CountOnly}
		case op.GetRequestPut() != nil:
			if p := op.GetRequestPut(); p.IgnoreValue || p.IgnoreLease {
				err = status.Error(codes.Unimplemented, "lockd does not serve a put with ignore_value or ignore_lease inside a transaction yet (docs/etcd.md)")
				break
			}
			o, err = s.putOp(c, op.GetRequestPut())
		case op.GetRequestDeleteRange() != nil:
			o, err = s.deleteOp(c, op.GetRequestDeleteRange())
		case op.GetRequestTxn() != nil:
			err = status.Error(codes.Unimplemented, "lockd does not serve nested transactions yet (docs/etcd.md)")
		default:
			err = status.Error(codes.InvalidArgument, "an empty operation in a transaction")
		}
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

func (s *Server) txnLocal(ctx context.Context, c *call, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	if len(r.Compare)+len(r.Success)+len(r.Failure) > fsm.MaxTxnOps {
		return nil, rpctypes.ErrGRPCTooManyOps
	}
	t := &fsm.Txn{}
	for _, x := range r.Compare {
		cmp, err := s.compareOf(c, x)
		if err != nil {
			return nil, err
		}
		t.Compare = append(t.Compare, cmp)
	}
	var err error
	if t.Success, err = s.opsOf(c, r.Success); err != nil {
		return nil, err
	}
	if t.Failure, err = s.opsOf(c, r.Failure); err != nil {
		return nil, err
	}
	if s.acl && len(t.Compare)+len(t.Success)+len(t.Failure) == 0 {
		if _, _, err := s.authorize(c); err != nil {
			return nil, err
		}
	}
	var res *fsm.TxnResult
	var index uint64
	if readOnly(r) {
		res, index, err = s.readTxn(ctx, t, r)
	} else {
		for _, op := range slices.Concat(r.Success, r.Failure) {
			if op.GetRequestRange() != nil && op.GetRequestRange().Revision != 0 {
				return nil, status.Error(codes.Unimplemented, "lockd does not serve a range at a past revision in a transaction that also writes yet (docs/etcd.md)")
			}
		}
		var owner string
		if owner, err = s.owner(c); err != nil {
			return nil, err
		}
		res, index, err = s.b.CommitTxn(ctx, owner, t, "an etcd transaction")
	}
	if err != nil {
		return nil, err
	}
	h := s.header(index)
	ops := r.Success
	if !res.Succeeded {
		ops = r.Failure
	}
	out := &pb.TxnResponse{Header: h, Succeeded: res.Succeeded, Responses: make([]*pb.ResponseOp, 0, len(ops))}
	for i, op := range ops {
		got := res.Results[i]
		var ro pb.ResponseOp
		switch {
		case op.GetRequestRange() != nil:
			rr := shapeRange(got.KVs, op.GetRequestRange())
			rr.Header = h
			ro.Response = &pb.ResponseOp_ResponseRange{ResponseRange: rr}
		case op.GetRequestPut() != nil:
			pr := &pb.PutResponse{Header: h}
			if op.GetRequestPut().PrevKv {
				pr.PrevKv = keyValuePtr(got.Prev)
			}
			ro.Response = &pb.ResponseOp_ResponsePut{ResponsePut: pr}
		default:
			ro.Response = &pb.ResponseOp_ResponseDeleteRange{ResponseDeleteRange: deleteResponse(h, got, op.GetRequestDeleteRange().PrevKv)}
		}
		out.Responses = append(out.Responses, &ro)
	}
	return out, nil
}

// readTxn answers a transaction that only reads as a read of the state
// (ReadNamespace: under the master lease, or from this node's own state
// when every read is serializable), its reads at their revisions.
func (s *Server) readTxn(ctx context.Context, t *fsm.Txn, r *pb.TxnRequest) (*fsm.TxnResult, uint64, error) {
	stale := serializableTxn(r)
	reads := func(ops []fsm.TxnOp, req []*pb.RequestOp) []fsm.RangeRead {
		out := make([]fsm.RangeRead, len(ops))
		for i, op := range ops {
			rev := uint64(max(req[i].GetRequestRange().Revision, 0))
			out[i] = fsm.RangeRead{Key: op.Key, End: op.End, Rev: rev, KeysOnly: op.KeysOnly}
			if stale && rev > 0 {
				s.waitApplied(ctx, rev)
			}
		}
		return out
	}
	success, failure := reads(t.Success, r.Success), reads(t.Failure, r.Failure)
	var ok bool
	var got [][]fsm.KV
	var applied uint64
	var rerr error
	err := s.b.ReadNamespace(ctx, stale, func() {
		ok, got, applied, rerr = s.b.FSM().ReadTxn(t.Compare, success, failure)
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return nil, 0, err
	}
	res := &fsm.TxnResult{Succeeded: ok}
	for _, kvs := range got {
		res.Results = append(res.Results, fsm.OpResult{Type: fsm.TxnGet, KVs: kvs, Count: len(kvs)})
	}
	return res, applied, nil
}

// compactLocal answers a compaction without changing the history: lockd
// keeps its history by its own limits, the same on every node (see
// docs/etcd.md). A revision it could not compact to is refused as etcd
// refuses it.
func (s *Server) compactLocal(ctx context.Context, c *call, r *pb.CompactionRequest) (*pb.CompactionResponse, error) {
	tok, on, err := s.authorize(c)
	if err != nil {
		return nil, err
	}
	if on && !tok.Admin {
		return nil, rpctypes.ErrGRPCPermissionDenied
	}
	var applied, compacted uint64
	if err := s.b.ReadNamespace(ctx, false, func() {
		applied, compacted = s.b.FSM().AppliedIndex(), s.b.FSM().Compacted()
	}); err != nil {
		return nil, err
	}
	switch {
	case r.Revision > revision(applied):
		return nil, rpctypes.ErrGRPCFutureRev
	case r.Revision < revision(compacted):
		return nil, rpctypes.ErrGRPCCompacted
	}
	return &pb.CompactionResponse{Header: s.header(applied)}, nil
}
