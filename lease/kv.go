package lease

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// The namespace of keys: reads through read (reads.go) on the key's or
// the prefix's topic, writes as fsm.OpTxn entries through propose, their
// refusals translated by apiErr (propose.go).

// kvWhat starts the description of every write of the namespace in
// messages, which apiErr tells from those of locks and elections.
const kvWhat = "the write"

// errCASFailed is the outcome of a put or delete whose cas did not hold:
// the transaction applied its failure branch, which changes nothing.
var errCASFailed = errors.New("cas failed")

// casError wraps errCASFailed with what the key was found to be.
type casError struct {
	key  string
	want uint64
	have uint64 // the key's modify index, 0 if it does not exist
}

func (e *casError) Error() string { return errCASFailed.Error() }
func (e *casError) Unwrap() error { return errCASFailed }

func badRequest(err error) error { return api.Errorf(api.CodeBadRequest, "%v", err) }

// invalid answers a write that failed validation: too_large for a size
// over a bound, bad_request otherwise.
func invalid(err error) error { return api.Errorf(api.InvalidCode(err), "%v", err) }

// KV reads one key. A key that does not exist reads with KV nil and the
// index of the last change of any key.
func (n *Node) KV(ctx context.Context, key string, opt api.ReadOptions) (api.KVRead, error) {
	if err := api.ValidateKey(key); err != nil {
		return api.KVRead{}, badRequest(err)
	}
	k := []byte(key)
	return read(ctx, n, opt, fsm.KeyTopic(k),
		func() uint64 { kv, _ := n.fsm.Get(k); return kv.ModifyIndex },
		func() api.KVRead {
			kv, ok := n.fsm.Get(k)
			out := api.KVRead{Index: kv.ModifyIndex}
			if ok {
				w := wireKV(kv)
				out.KV = &w
			}
			return out
		})
}

// KVList reads one page of the keys that start with opt.Prefix. Its
// index is the namespace's (the last change of any key); a blocking query
// wakes only for changes of keys under the prefix.
func (n *Node) KVList(ctx context.Context, opt api.KVListOptions) (api.KVList, error) {
	if err := api.ValidatePrefix(opt.Prefix); err != nil {
		return api.KVList{}, badRequest(err)
	}
	prefix := []byte(opt.Prefix)
	limit := opt.Limit
	if limit <= 0 {
		limit = api.DefaultKVListLimit
	}
	limit = min(limit, api.MaxKVListLimit)
	var after []byte
	if opt.After != "" {
		after = []byte(opt.After)
	}
	return read(ctx, n, opt.ReadOptions, fsm.PrefixTopic(prefix), n.fsm.KVIndex, func() api.KVList {
		p := n.fsm.Range(prefix, fsm.PrefixEnd(prefix), after, limit, opt.Keys, opt.Count)
		out := api.KVList{KVs: make([]api.KV, 0, len(p.KVs)), Count: p.Count, Index: p.Index}
		size := 0
		for i, kv := range p.KVs {
			if size += len(kv.Value); size > api.MaxKVPageBytes && i > 0 {
				// The page is full: stop before this key.
				out.Next = out.KVs[i-1].Key
				break
			}
			out.KVs = append(out.KVs, wireKV(kv))
		}
		if !opt.Count {
			out.Count = len(out.KVs)
		}
		if out.Next == "" && p.More {
			out.Next = string(p.Next)
		}
		return out
	})
}

// watched is what a watch read: a page of events or the error.
type watched struct {
	page fsm.EventPage
	err  error
}

// KVWatch answers the events of a key, or of the keys under a prefix,
// after opt.Index: at once if there are any, else when the first comes
// or opt.Wait runs out. The answer's Index is the index to watch after
// next. A watch from before the history's oldest index is refused with
// an *api.CompactedError.
func (n *Node) KVWatch(ctx context.Context, opt api.WatchOptions) (api.KVEvents, error) {
	var start, end []byte
	if opt.Prefix {
		if err := api.ValidatePrefix(opt.Key); err != nil {
			return api.KVEvents{}, badRequest(err)
		}
		start, end = []byte(opt.Key), fsm.PrefixEnd([]byte(opt.Key))
	} else {
		if err := api.ValidateKey(opt.Key); err != nil {
			return api.KVEvents{}, badRequest(err)
		}
		start = []byte(opt.Key)
	}
	topic := fsm.KeyTopic(start)
	if opt.Prefix {
		topic = fsm.PrefixTopic(start)
	}
	limit := opt.Limit
	if limit <= 0 {
		limit = api.DefaultWatchLimit
	}
	limit = min(limit, api.MaxWatchLimit)
	after := opt.Index
	// The index a blocking watch waits on: that of the first event after
	// the one asked for, or the index asked for while there is none (a
	// compacted history ends the wait at once, to be answered).
	first := func() uint64 {
		p, err := n.fsm.Events(after, start, end, 1)
		switch {
		case err != nil:
			return math.MaxUint64
		case len(p.Events) > 0:
			return p.Events[0].Index
		}
		return after
	}
	w, err := read(ctx, n, opt.ReadOptions, topic, first, func() watched {
		p, err := n.fsm.Events(after, start, end, limit)
		return watched{p, err}
	})
	if err != nil {
		return api.KVEvents{}, err
	}
	if w.err != nil {
		n.count.kvCompacted.Add(1)
		return api.KVEvents{}, n.apiErr(w.err, "", kvWhat)
	}
	out := api.KVEvents{Events: make([]api.Event, 0, len(w.page.Events)), Index: w.page.Next, More: w.page.More}
	for _, e := range w.page.Events {
		ev := api.Event{Index: e.Index, Type: string(e.Type), KV: wireKV(e.KV)}
		if e.Prev != nil {
			p := wireKV(*e.Prev)
			ev.Prev = &p
		}
		if opt.Keys {
			ev.KV.Value = nil
			if ev.Prev != nil {
				ev.Prev.Value = nil
			}
		}
		out.Events = append(out.Events, ev)
	}
	out.Events = n.unsafeWatchEvents(out.Events)
	return out, nil
}

// PutKV writes one key (see api.KVPutRequest).
func (n *Node) PutKV(ctx context.Context, key string, req api.KVPutRequest) (api.KVPutResponse, error) {
	if err := req.Validate(key); err != nil {
		return api.KVPutResponse{}, invalid(err)
	}
	k := []byte(key)
	put := fsm.TxnOp{Type: fsm.TxnPut, Key: k, Value: req.Value, Flags: req.Flags, Sequential: req.Sequential}
	if req.Ephemeral {
		put.Session = req.Session
	}
	t := &fsm.Txn{Success: []fsm.TxnOp{put}, Guard: fsmGuard(req.Guard)}
	if req.CAS != nil {
		t.Compare = []fsm.Compare{fsm.CAS(k, *req.CAS)}
		t.Failure = []fsm.TxnOp{fsm.Get(k)}
	}
	res, index, err := n.commitTxn(ctx, fsm.Command{Op: fsm.OpTxn, Session: req.Session, Seq: req.Seq, Txn: t, Owner: req.Owner}, fmt.Sprintf("%s to key %q", kvWhat, key))
	if err != nil {
		return api.KVPutResponse{}, err
	}
	if !res.Succeeded {
		return api.KVPutResponse{}, n.apiErr(casFailure(key, *req.CAS, res), req.Session, kvWhat)
	}
	r := res.Results[0]
	out := api.KVPutResponse{KV: wireKV(*r.KV), Index: index}
	if r.Prev != nil {
		p := wireKV(*r.Prev)
		out.Prev = &p
	}
	return out, nil
}

// DeleteKV deletes one key, or every key under a prefix.
func (n *Node) DeleteKV(ctx context.Context, req api.KVDelete) (api.KVDeleteResponse, error) {
	if err := req.Validate(); err != nil {
		return api.KVDeleteResponse{}, invalid(err)
	}
	k := []byte(req.Key)
	del := fsm.Delete(k)
	what := fmt.Sprintf("%s (a delete) of key %q", kvWhat, req.Key)
	if req.Prefix {
		del.End = fsm.PrefixEnd(k)
		what = fmt.Sprintf("%s (a delete) of the keys under %q", kvWhat, req.Key)
	}
	t := &fsm.Txn{Success: []fsm.TxnOp{del}, Guard: fsmGuard(req.Guard)}
	if req.CAS != nil {
		t.Compare = []fsm.Compare{fsm.CAS(k, *req.CAS)}
		t.Failure = []fsm.TxnOp{fsm.Get(k)}
	}
	res, index, err := n.commitTxn(ctx, fsm.Command{Op: fsm.OpTxn, Session: req.Session, Seq: req.Seq, Txn: t, Owner: req.Owner}, what)
	if err != nil {
		return api.KVDeleteResponse{}, err
	}
	if !res.Succeeded {
		return api.KVDeleteResponse{}, n.apiErr(casFailure(req.Key, *req.CAS, res), req.Session, kvWhat)
	}
	return api.KVDeleteResponse{Deleted: res.Results[0].Count, Index: index}, nil
}

// casFailure describes a cas that did not hold, from the get of the
// failure branch.
func casFailure(key string, want uint64, res *fsm.TxnResult) error {
	e := &casError{key: key, want: want}
	if r := res.Results[0]; len(r.KVs) > 0 {
		e.have = r.KVs[0].ModifyIndex
	}
	return e
}

// Txn runs a transaction (see api.TxnRequest).
func (n *Node) Txn(ctx context.Context, req api.TxnRequest) (api.TxnResponse, error) {
	if err := req.Validate(); err != nil {
		return api.TxnResponse{}, invalid(err)
	}
	t := &fsm.Txn{Guard: fsmGuard(req.Guard)}
	for _, c := range req.Compare {
		t.Compare = append(t.Compare, fsmCompare(c))
	}
	t.Success = fsmOps(req.Success, req.Session)
	t.Failure = fsmOps(req.Failure, req.Session)
	what := kvWhat + " (a transaction)"
	res, index, err := n.commitTxn(ctx, fsm.Command{Op: fsm.OpTxn, Session: req.Session, Seq: req.Seq, Txn: t, Owner: req.Owner}, what)
	if err != nil {
		return api.TxnResponse{}, err
	}
	out := api.TxnResponse{Succeeded: res.Succeeded, Results: make([]api.TxnResult, 0, len(res.Results)), Index: index}
	for _, r := range res.Results {
		w := api.TxnResult{Type: string(r.Type), Count: r.Count, More: r.More}
		if r.KV != nil {
			kv := wireKV(*r.KV)
			w.KV = &kv
		}
		if r.Prev != nil {
			p := wireKV(*r.Prev)
			w.Prev = &p
		}
		if r.Type == fsm.TxnGet {
			w.KVs = make([]api.KV, 0, len(r.KVs))
			for _, kv := range r.KVs {
				w.KVs = append(w.KVs, wireKV(kv))
			}
		}
		out.Results = append(out.Results, w)
	}
	return out, nil
}

// commitTxn commits a transaction on the leader: a refusal the state
// tells in advance is answered without an entry (refusedAtOnce), as for
// locks; otherwise the entry's result and index.
func (n *Node) commitTxn(ctx context.Context, cmd fsm.Command, what string) (*fsm.TxnResult, uint64, error) {
	if _, err := n.leading(); err != nil {
		return nil, 0, err
	}
	if refused, err := n.refusedAtOnce(ctx, cmd, what); refused {
		return nil, 0, err
	}
	res, err := n.propose(ctx, cmd)
	if err != nil {
		return nil, 0, err
	}
	if res.Err != nil {
		return nil, 0, n.apiErr(res.Err, cmd.Session, what)
	}
	return res.Txn, res.Index, nil
}

func fsmGuard(g *api.Guard) *fsm.Guard {
	if g == nil {
		return nil
	}
	return &fsm.Guard{Lock: g.Lock, Token: g.Token}
}

func fsmCompare(c api.Compare) fsm.Compare {
	out := fsm.Compare{Key: []byte(c.Key), Target: fsm.CompareTarget(c.Target), Op: fsm.CompareOp(c.Op), Value: c.Value}
	if c.Number != nil {
		out.Number = *c.Number
	}
	if c.Session != nil {
		out.Session = *c.Session
	}
	return out
}

func fsmOps(ops []api.TxnOp, session string) []fsm.TxnOp {
	out := make([]fsm.TxnOp, 0, len(ops))
	for _, op := range ops {
		switch {
		case op.Put != nil:
			p := fsm.TxnOp{Type: fsm.TxnPut, Key: []byte(op.Put.Key), Value: op.Put.Value, Flags: op.Put.Flags, Sequential: op.Put.Sequential}
			if op.Put.Ephemeral {
				p.Session = session
			}
			out = append(out, p)
		case op.Delete != nil:
			out = append(out, fsmRange(fsm.TxnDelete, *op.Delete))
		case op.Get != nil:
			out = append(out, fsmRange(fsm.TxnGet, *op.Get))
		}
	}
	return out
}

func fsmRange(typ fsm.TxnOpType, r api.TxnRange) fsm.TxnOp {
	op := fsm.TxnOp{Type: typ, Key: []byte(r.Key), Limit: r.Limit, KeysOnly: r.Keys, CountOnly: r.Count}
	if r.Prefix {
		op.End = fsm.PrefixEnd(op.Key)
	}
	return op
}

func wireKV(kv fsm.KV) api.KV {
	return api.KV{Key: string(kv.Key), Value: kv.Value, CreateIndex: kv.CreateIndex, ModifyIndex: kv.ModifyIndex,
		Version: kv.Version, Session: kv.Session, Flags: kv.Flags}
}
