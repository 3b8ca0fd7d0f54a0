package client

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/lockd/lockd/api"
)

// KV is the namespace of keys: small values under names that follow the
// rule of lock names, with reads, lists, writes (a put, a compare-and-swap,
// a delete, a transaction) and watches. Get one from Client.KV, or from
// Session.KV to write with the session: its writes then carry request
// numbers, so that a write repeated after a lost answer is never applied
// twice, and a put may be ephemeral (deleted when the session ends).
//
// Writes of a KV without a session are repeated only when the server
// surely did not apply them (a connection that failed before the request
// went out, no_leader, ...); after a lost answer or 504 timeout they
// return the error, and the outcome is unknown (ErrTimeout). A KV with a
// session repeats them as lock calls are repeated, with the same request
// number: the leader applies such a write at most once. A repeat that
// finds its number already applied (the first answer was lost) returns an
// error that matches ErrRepeated: the write took effect once, and its
// answer is lost; read the key to see what it is.
//
// A KV is safe for concurrent use.
type KV struct {
	c   *Client
	s   *Session // nil: writes carry no session, or only sid
	sid string   // the id of a session kept alive elsewhere (SessionKV)
}

// KV returns the namespace of keys, written without a session.
func (c *Client) KV() *KV { return &KV{c: c} }

// KV returns the namespace of keys, written with this session: writes
// carry its id and request numbers, and may be ephemeral.
func (s *Session) KV() *KV { return &KV{c: s.c, s: s} }

// SessionKV returns the namespace of keys, written with the session of
// id, which some other process keeps alive (the LOCKD_SESSION that lockd
// lock and lockd elect give the command they run): its puts may be
// ephemeral, owned by that session. Its writes carry no request numbers,
// which belong to the session's owner, so they are repeated only as those
// of a KV without a session are.
func (c *Client) SessionKV(id string) *KV { return &KV{c: c, sid: id} }

// Session returns the session the KV writes with, or nil (also for a
// SessionKV).
func (k *KV) Session() *Session { return k.s }

// kvPath is the path of one key: keys are checked by the server and hold
// only [A-Za-z0-9._/-], which are safe in a path.
func kvPath(key string) string { return "/v1/kv/" + key }

// badRequest is an error of a request the client refuses to send,
// matching ErrBadRequest.
func badRequest(format string, args ...any) error {
	return api.Errorf(api.CodeBadRequest, "client: "+format, args...)
}

// invalid is the error of a request that fails its Validate here, as
// the server would answer it: ErrTooLarge for a value over its bound,
// else ErrBadRequest.
func invalid(err error) error {
	return api.Errorf(api.InvalidCode(err), "client: %v", err)
}

// Get reads one key. A key that does not exist is an error that matches
// ErrKeyNotFound; the KVRead returned with it still has Index, the index
// of the last change of any key, from which Watch sees the key's creation.
func (k *KV) Get(ctx context.Context, key string, cons Consistency) (api.KVRead, error) {
	var out api.KVRead
	err := k.c.call(ctx, "GET", kvPath(key)+query(0, 0, string(cons)), nil, &out, idempotent, 0)
	var ie *indexedError
	if errors.As(err, &ie) && ie.err.Code == api.CodeNotFound {
		return api.KVRead{Index: ie.index}, err
	}
	if err == nil && out.KV == nil {
		return out, ErrKeyNotFound
	}
	return out, err
}

// ListOptions are the options of List, ListPage and Count.
type ListOptions struct {
	// Consistency of each page's read.
	Consistency Consistency
	// KeysOnly leaves the values out of the records.
	KeysOnly bool
	// Limit is the most keys a page holds: 1 to api.MaxKVListLimit, 0 for
	// the server's default (api.DefaultKVListLimit). A page also stops
	// before its values pass api.MaxKVPageBytes.
	Limit int
	// After starts the list after this key ("" for the first key).
	After string
}

func (o ListOptions) query(prefix string, count bool) string {
	q := url.Values{"prefix": {prefix}}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.After != "" {
		q.Set("after", o.After)
	}
	if o.KeysOnly {
		q.Set("keys", "true")
	}
	if count {
		q.Set("count", "true")
	}
	if o.Consistency != Default {
		q.Set(string(o.Consistency), "true")
	}
	return "/v1/kv?" + q.Encode()
}

// ListPage reads one page of the keys that start with prefix ("" for
// every key), in key order: when more follow, Next is the key to pass as
// opt.After for the next page.
func (k *KV) ListPage(ctx context.Context, prefix string, opt ListOptions) (api.KVList, error) {
	var out api.KVList
	err := k.c.call(ctx, "GET", opt.query(prefix, false), nil, &out, idempotent, 0)
	return out, err
}

// List reads every key that starts with prefix, page by page, in key
// order. Each page is read on its own: a key written meanwhile may show
// as it was before or after. The answer's Index is that of the first page:
// a Watch from it sees every change made after that page was read (some
// of which the later pages may already show), so a list and a watch from
// its Index miss nothing. Count is the number of keys read; Next is "".
func (k *KV) List(ctx context.Context, prefix string, opt ListOptions) (api.KVList, error) {
	var first *api.KVList
	all, err := api.AllPages(func(after string) ([]api.KV, string, error) {
		o := opt
		if after != "" {
			o.After = after
		}
		page, err := k.ListPage(ctx, prefix, o)
		if err != nil {
			return nil, "", err
		}
		if first == nil {
			first = &page
		}
		return page.KVs, page.Next, nil
	})
	if err != nil {
		return api.KVList{}, err
	}
	return api.KVList{KVs: all, Count: len(all), Index: first.Index}, nil
}

// Count returns how many keys start with prefix (after opt.After, if
// set), and the index of the read, without reading them.
func (k *KV) Count(ctx context.Context, prefix string, opt ListOptions) (n int, index uint64, err error) {
	var out api.KVList
	err = k.c.call(ctx, "GET", opt.query(prefix, true), nil, &out, idempotent, 0)
	return out.Count, out.Index, err
}

// writeOptions are what WriteOptions set.
type writeOptions struct {
	flags      uint64
	cas        *uint64
	ephemeral  bool
	sequential bool
	guard      *api.Guard
	err        error // an option that cannot be had (FencedBy a Mutex that holds nothing)
}

// WriteOption is an option of Put, CAS, Delete and DeletePrefix. Flags,
// Ephemeral and Sequential are options of a put only.
type WriteOption func(*writeOptions)

// WithFlags sets the put key's flags, a number for the client's own use.
func WithFlags(flags uint64) WriteOption { return func(o *writeOptions) { o.flags = flags } }

// WithCAS makes the write apply only if the key's modify index is index:
// for a put, 0 means only if the key does not exist; a delete needs the
// index of the key it deletes. Failing that, nothing is written and the
// error matches ErrCASFailed.
func WithCAS(index uint64) WriteOption { return func(o *writeOptions) { o.cas = &index } }

// Ephemeral makes the put key owned by the KV's session: the entry that
// ends the session (Close, expiry) deletes it. It needs a KV from
// Session.KV.
func Ephemeral() WriteOption { return func(o *writeOptions) { o.ephemeral = true } }

// Sequential makes the put create a new key: the key given, as a prefix,
// followed by a 20-digit number from the namespace's counter, which never
// repeats. The answer's KV.Key is the key made.
func Sequential() WriteOption { return func(o *writeOptions) { o.sequential = true } }

// WithGuard makes the write apply only while a holder of lock holds it with
// exactly the fencing token token: refused with an error matching
// ErrStaleToken once a higher token holds it, ErrNotHolder otherwise
// (free, or held under other tokens).
func WithGuard(lock string, token uint64) WriteOption {
	return func(o *writeOptions) { o.guard = &api.Guard{Lock: lock, Token: token} }
}

// FencedBy guards the write (WithGuard) with m's lock and the token of its
// current holding, read when the write is made: the write applies only
// while that holding is the lock's. A Mutex that holds nothing makes the
// write fail with ErrNotLocked, without sending it.
func FencedBy(m *Mutex) WriteOption {
	return func(o *writeOptions) {
		t := m.Token()
		if t == 0 {
			o.err = fmt.Errorf("%w: a write fenced by lock %q", ErrNotLocked, m.Name())
			return
		}
		o.guard = &api.Guard{Lock: m.Name(), Token: t}
	}
}

func applyWrite(opts []WriteOption) writeOptions {
	var o writeOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// session returns the session id and a new request number for a write,
// or ErrSessionLost if the KV's session can no longer vouch for itself.
func (k *KV) session() (id string, seq uint64, err error) {
	if k.s == nil {
		return k.sid, 0, nil
	}
	if !k.s.Alive() {
		return "", 0, ErrSessionLost
	}
	return k.s.id, k.s.nextSeq(), nil
}

// maxRenumber bounds how often a write refused as a repeat it cannot be
// is sent again with a new number.
const maxRenumber = 3

// write sends a write of the namespace. With a session, build is given
// the session id and a request number; the write is repeated with that
// number after an open outcome (idempotent), and a repeat of a number
// that nothing this call sent could have applied (the leader's floor of
// old numbers, see docs/api.md) is sent again with a new number. Without
// a session it is repeated only when surely not applied (unsent).
func (k *KV) write(ctx context.Context, method, path string, build func(session string, seq uint64) any, out any) error {
	for range maxRenumber {
		id, seq, err := k.session()
		if err != nil {
			return err
		}
		policy := unsent
		if k.s != nil {
			policy = idempotent
		}
		var open bool
		err = k.c.callTold(ctx, method, path, build(id, seq), out, policy, 0, &open)
		switch {
		case err == nil:
			return nil
		case k.s != nil && errors.Is(err, ErrSessionExpired):
			k.s.lose(ErrSessionExpired)
			return fmt.Errorf("%w: %v", ErrSessionLost, err) //nolint:errorlint // ErrSessionLost is what the caller tests; the server's sentence is told
		case errors.Is(err, ErrRepeated) && open:
			return fmt.Errorf("client: the write was applied by an earlier attempt whose answer was lost (read the key to see it): %w", err)
		case errors.Is(err, ErrRepeated) && k.s != nil:
			continue // the number fell below the leader's floor; nothing was applied
		}
		return err
	}
	return fmt.Errorf("client: %d request numbers in a row refused as repeats: %w", maxRenumber, ErrRepeated)
}

// Put writes value to key, creating it or replacing its value, with the
// options given (WithFlags, WithCAS, Ephemeral, Sequential, WithGuard,
// FencedBy). The answer has the record written, the record it replaced,
// and the index of the write.
func (k *KV) Put(ctx context.Context, key string, value []byte, opts ...WriteOption) (api.KVPutResponse, error) {
	o := applyWrite(opts)
	if o.err != nil {
		return api.KVPutResponse{}, o.err
	}
	if o.ephemeral && k.s == nil && k.sid == "" {
		return api.KVPutResponse{}, badRequest("an ephemeral put needs a session: use Session.KV")
	}
	req := api.KVPutRequest{Value: value, Flags: o.flags, Ephemeral: o.ephemeral, CAS: o.cas, Sequential: o.sequential, Guard: o.guard}
	probe := req
	probe.Session = "-"
	if err := probe.Validate(key); err != nil {
		return api.KVPutResponse{}, invalid(err)
	}
	var out api.KVPutResponse
	err := k.write(ctx, "PUT", kvPath(key), func(session string, seq uint64) any {
		r := req
		r.Session, r.Seq = session, seq
		return r
	}, &out)
	return out, err
}

// CAS writes value to key only if the key's modify index is index (0:
// only if it does not exist): Put with WithCAS(index). Failing that,
// nothing is written and the error matches ErrCASFailed.
func (k *KV) CAS(ctx context.Context, key string, value []byte, index uint64, opts ...WriteOption) (api.KVPutResponse, error) {
	return k.Put(ctx, key, value, append(opts, WithCAS(index))...)
}

// Delete deletes one key, with the options WithCAS (the key's modify
// index), WithGuard and FencedBy. Deleting a key that does not exist
// deletes nothing (Deleted 0) and is no error.
func (k *KV) Delete(ctx context.Context, key string, opts ...WriteOption) (api.KVDeleteResponse, error) {
	return k.delete(ctx, api.KVDelete{Key: key}, opts)
}

// DeletePrefix deletes every key that starts with prefix, with the
// options WithGuard and FencedBy. prefix must not be empty: to delete
// every key, use a transaction (api.TxnRange{Key: "", Prefix: true}),
// which needs an admin token when ACLs are on.
func (k *KV) DeletePrefix(ctx context.Context, prefix string, opts ...WriteOption) (api.KVDeleteResponse, error) {
	if prefix == "" {
		return api.KVDeleteResponse{}, badRequest("DeletePrefix needs a prefix: an empty one would delete every key")
	}
	return k.delete(ctx, api.KVDelete{Key: prefix, Prefix: true}, opts)
}

func (k *KV) delete(ctx context.Context, d api.KVDelete, opts []WriteOption) (api.KVDeleteResponse, error) {
	o := applyWrite(opts)
	switch {
	case o.err != nil:
		return api.KVDeleteResponse{}, o.err
	case o.flags != 0 || o.ephemeral || o.sequential:
		return api.KVDeleteResponse{}, badRequest("WithFlags, Ephemeral and Sequential are options of a put, not of a delete")
	}
	d.CAS, d.Guard = o.cas, o.guard
	probe := d
	probe.Session = "-"
	if err := probe.Validate(); err != nil {
		return api.KVDeleteResponse{}, invalid(err)
	}
	path := kvPath(d.Key)
	if d.Prefix {
		path = "/v1/kv?" + url.Values{"prefix": {d.Key}}.Encode()
	} else if d.CAS != nil {
		path += "?cas=" + strconv.FormatUint(*d.CAS, 10)
	}
	var out api.KVDeleteResponse
	err := k.write(ctx, "DELETE", path, func(session string, seq uint64) any {
		return api.KVDeleteRequest{Session: session, Seq: seq, Guard: d.Guard}
	}, &out)
	return out, err
}

// DoTxn runs a transaction given as the API's request: if every compare
// holds, the Success operations run, else the Failure ones, all in one
// entry. The KV's session, if any, is the request's Session (it owns the
// ephemeral puts) and numbers it; a Session or Seq set in req is replaced.
func (k *KV) DoTxn(ctx context.Context, req api.TxnRequest) (api.TxnResponse, error) {
	probe := req
	probe.Session, probe.Seq = "-", 0
	if k.s == nil && k.sid == "" {
		probe.Session = ""
	}
	if err := probe.Validate(); err != nil {
		if probe.Session == "" && hasEphemeral(req) {
			return api.TxnResponse{}, badRequest("an ephemeral put in a transaction needs a session: use Session.KV")
		}
		return api.TxnResponse{}, invalid(err)
	}
	var out api.TxnResponse
	err := k.write(ctx, "POST", "/v1/txn", func(session string, seq uint64) any {
		r := req
		r.Session, r.Seq = session, seq
		return r
	}, &out)
	return out, err
}

func hasEphemeral(req api.TxnRequest) bool {
	for _, op := range append(append([]api.TxnOp(nil), req.Success...), req.Failure...) {
		if op.Put != nil && op.Put.Ephemeral {
			return true
		}
	}
	return false
}

// Txn is a transaction being built: Txn().If(compares...).Then(ops...)
// .Else(ops...).Commit(ctx). The compare and operation helpers (Compare,
// KeyExists, KeyMissing, OpPut, OpDelete, OpGet, ...) make its parts; any
// api.Compare and api.TxnOp will do.
type Txn struct {
	k   *KV
	req api.TxnRequest
	err error
}

// Txn starts a transaction.
func (k *KV) Txn() *Txn { return &Txn{k: k} }

// If adds compares: the Then operations run if every compare holds, the
// Else ones otherwise.
func (t *Txn) If(cmps ...api.Compare) *Txn {
	t.req.Compare = append(t.req.Compare, cmps...)
	return t
}

// Then adds operations of the branch that runs when every compare holds.
func (t *Txn) Then(ops ...api.TxnOp) *Txn {
	t.req.Success = append(t.req.Success, ops...)
	return t
}

// Else adds operations of the branch that runs when a compare does not hold.
func (t *Txn) Else(ops ...api.TxnOp) *Txn {
	t.req.Failure = append(t.req.Failure, ops...)
	return t
}

// Guard makes the transaction apply only while the holding of lock with
// token is the lock's (see WithGuard); FencedBy takes both from a Mutex.
func (t *Txn) Guard(lock string, token uint64) *Txn {
	t.req.Guard = &api.Guard{Lock: lock, Token: token}
	return t
}

// FencedBy guards the transaction with m's lock and current token (see
// the WriteOption FencedBy): read now, when FencedBy is called.
func (t *Txn) FencedBy(m *Mutex) *Txn {
	var o writeOptions
	FencedBy(m)(&o)
	t.req.Guard, t.err = o.guard, o.err
	return t
}

// Request returns the transaction as the API's request.
func (t *Txn) Request() api.TxnRequest { return t.req }

// Commit runs the transaction (DoTxn). The answer says which branch ran
// (Succeeded) and has a result per operation of that branch.
func (t *Txn) Commit(ctx context.Context) (api.TxnResponse, error) {
	if t.err != nil {
		return api.TxnResponse{}, t.err
	}
	return t.k.DoTxn(ctx, t.req)
}

// Compare compares a target of key ("version", "create_index",
// "modify_index", "exists": the number n) with op ("=", "!=", "<", ">").
// CompareValue and CompareSession compare the other targets.
func Compare(key, target, op string, n uint64) api.Compare {
	return api.Compare{Key: key, Target: target, Op: op, Number: &n}
}

// CompareValue compares the value of key with value, by op ("=", "!=",
// "<", ">", bytewise). A key that does not exist never compares.
func CompareValue(key, op string, value []byte) api.Compare {
	if value == nil {
		value = []byte{}
	}
	return api.Compare{Key: key, Target: api.TargetValue, Op: op, Value: value}
}

// CompareSession compares the session that owns key ("" for none) with
// session.
func CompareSession(key, op, session string) api.Compare {
	return api.Compare{Key: key, Target: api.TargetSession, Op: op, Session: &session}
}

// ModifyIndexIs holds while key's modify index is index (0: the key does
// not exist): the compare of a compare-and-swap.
func ModifyIndexIs(key string, index uint64) api.Compare {
	return Compare(key, api.TargetModifyIndex, "=", index)
}

// KeyExists holds if key exists; KeyMissing if it does not.
func KeyExists(key string) api.Compare { return Compare(key, api.TargetExists, "=", 1) }

// KeyMissing holds if key does not exist.
func KeyMissing(key string) api.Compare { return Compare(key, api.TargetExists, "=", 0) }

// OpPut puts value to key in a transaction; set the fields of its
// api.TxnPut for flags, ephemeral (owned by the transaction's session) or
// sequential.
func OpPut(key string, value []byte) api.TxnOp {
	return api.TxnOp{Put: &api.TxnPut{Key: key, Value: value}}
}

// OpDelete deletes key in a transaction; OpDeletePrefix every key that
// starts with a prefix.
func OpDelete(key string) api.TxnOp { return api.TxnOp{Delete: &api.TxnRange{Key: key}} }

// OpDeletePrefix deletes every key that starts with prefix.
func OpDeletePrefix(prefix string) api.TxnOp {
	return api.TxnOp{Delete: &api.TxnRange{Key: prefix, Prefix: true}}
}

// OpGet reads key in a transaction; OpGetPrefix the keys that start with
// a prefix.
func OpGet(key string) api.TxnOp { return api.TxnOp{Get: &api.TxnRange{Key: key}} }

// OpGetPrefix reads the keys that start with prefix, up to limit of them
// (0: all).
func OpGetPrefix(prefix string, limit int) api.TxnOp {
	return api.TxnOp{Get: &api.TxnRange{Key: prefix, Prefix: true, Limit: limit}}
}

// DefaultWatchWait is how long each blocking query of a Watch waits on the
// server; a change answers it at once.
const DefaultWatchWait = time.Minute

type watchOptions struct {
	prefix, keys bool
	wait         time.Duration
}

// WatchOption configures Watch.
type WatchOption func(*watchOptions)

// WatchPrefix watches every key that starts with the key given ("" for
// every key).
func WatchPrefix() WatchOption { return func(o *watchOptions) { o.prefix = true } }

// WatchKeysOnly leaves the values out of the events.
func WatchKeysOnly() WatchOption { return func(o *watchOptions) { o.keys = true } }

// WatchWait sets how long each blocking query waits (up to api.MaxWait).
// Default DefaultWatchWait.
func WatchWait(d time.Duration) WatchOption { return func(o *watchOptions) { o.wait = d } }

// WatchEvent is what a Watch delivers: an event (Err nil), or, last, the
// error that ended the watch.
type WatchEvent struct {
	api.Event
	// Err ends the watch: an *api.CompactedError (errors.Is ErrCompacted)
	// when the history no longer reaches back to the index the watch
	// asked from — read again and watch from that read's index; or a
	// refusal the watch cannot ride out (ErrBadRequest, a 403, ...).
	Err error
}

// Watch delivers every change of key (or, with WatchPrefix, of every key
// under it) made after the index after, once each and in order, on the
// channel it returns, until ctx ends (the channel is then closed) or an
// error ends it (a last WatchEvent with Err, then the channel is closed).
// after is the index of the read the watch follows: KVRead.Index of Get
// (also for a key that does not exist), KVList.Index of List or the index
// of Count.
//
// It reads through blocking queries, each from the index the last answer
// gave, all of whose events it delivered before asking again; a change of
// leader, a node that stops answering or a lost connection is ridden out
// by asking again, on another member if need be, from the same index, so
// no event is missed or delivered twice. The events of one entry (a
// transaction) have the same Index and come together. A slow reader holds
// the watch back: nothing is dropped, but the history the server keeps is
// bounded, and a watch that falls behind it ends with ErrCompacted.
func (k *KV) Watch(ctx context.Context, key string, after uint64, opts ...WatchOption) <-chan WatchEvent {
	o := watchOptions{wait: DefaultWatchWait}
	for _, f := range opts {
		f(&o)
	}
	ch := make(chan WatchEvent)
	go func() {
		defer close(ch)
		send := func(ev WatchEvent) bool {
			select {
			case ch <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for {
			var res api.KVEvents
			err := k.c.call(ctx, "GET", watchPath(key, after, o), nil, &res, idempotent, o.wait)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				send(WatchEvent{Err: err})
				return
			}
			for _, e := range res.Events {
				if e.Index <= after {
					continue // already delivered: an answer never repeats one, but a watch must not either
				}
				if !send(WatchEvent{Event: e}) {
					return
				}
			}
			after = max(after, res.Index)
		}
	}()
	return ch
}

// watchPath is the path and query of one blocking query of a watch.
func watchPath(key string, after uint64, o watchOptions) string {
	q := url.Values{"watch": {"true"}, "index": {strconv.FormatUint(after, 10)}, "wait": {o.wait.String()}}
	if o.keys {
		q.Set("keys", "true")
	}
	if o.prefix {
		q.Set("prefix", key)
		return "/v1/kv?" + q.Encode()
	}
	return kvPath(key) + "?" + q.Encode()
}
