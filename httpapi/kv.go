package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
)

// The routes of the namespace of keys: GET, PUT and DELETE of one key,
// GET and DELETE of a prefix, POST /v1/txn; watches are GETs with
// ?watch.

// KVService is the part of Service that serves the namespace of keys.
// Keys reach it checked with api.ValidateKey, prefixes with
// api.ValidatePrefix, and requests with their Validate methods.
type KVService interface {
	// KV reads one key; a key that does not exist reads with KV nil.
	KV(ctx context.Context, key string, opt ReadOptions) (api.KVRead, error)
	// KVList reads one page of the keys under a prefix; opt.Limit is
	// within 1..api.MaxKVListLimit.
	KVList(ctx context.Context, opt api.KVListOptions) (api.KVList, error)
	// KVWatch answers the events after opt.Index, blocking up to
	// opt.Wait for one; *api.CompactedError when the history no longer
	// reaches back to opt.Index.
	KVWatch(ctx context.Context, opt api.WatchOptions) (api.KVEvents, error)
	PutKV(ctx context.Context, key string, req api.KVPutRequest) (api.KVPutResponse, error)
	DeleteKV(ctx context.Context, req api.KVDelete) (api.KVDeleteResponse, error)
	Txn(ctx context.Context, req api.TxnRequest) (api.TxnResponse, error)
}

// The paths of the namespace's routes.
const (
	kvKeyPath  = "/v1/kv/{key:.*}"
	kvListPath = "/v1/kv"
	txnPath    = "/v1/txn"
)

// The query parameters of the namespace's reads (route.query).
var (
	kvKeyQuery  = []string{"index", "wait", "stale", "consistent", "raw", "watch", "keys", "limit"}
	kvListQuery = []string{"index", "wait", "stale", "consistent", "prefix", "limit", "after", "keys", "count", "watch"}
)

// onKey returns the need of access on the key named in the path.
func onKey(access acl.Access) need {
	return func(r *http.Request) (acl.Action, error) {
		key, err := pathKey(r)
		if err != nil {
			return acl.Action{}, err
		}
		return acl.Action{Kind: acl.Key, Name: key, Access: access}, nil
	}
}

// onPrefix returns the need of access on the prefix of the query: a
// rule whose prefix starts it. A write of every key (the empty prefix)
// needs an admin token.
func onPrefix(access acl.Access) need {
	return func(r *http.Request) (acl.Action, error) {
		prefix := r.URL.Query().Get("prefix")
		if err := api.ValidatePrefix(prefix); err != nil {
			return acl.Action{}, badRequest("%v", err)
		}
		if prefix == "" && access == acl.Write {
			return acl.Action{Admin: true}, nil
		}
		return acl.Action{Kind: acl.Key, Name: prefix, Access: access}, nil
	}
}

// pathKey returns the key in r's path, checked with api.ValidateKey.
func pathKey(r *http.Request) (string, error) {
	key := mux.Vars(r)["key"]
	if err := api.ValidateKey(key); err != nil {
		return "", badRequest("%v", err)
	}
	return key, nil
}

// indexed is an answer or an error that carries the index the read saw
// in the X-Lockd-Index header (api.HeaderIndex).
type indexed struct {
	body  any
	index uint64
}

// indexedError is an error answered with the X-Lockd-Index header.
type indexedError struct {
	err   error
	index uint64
}

func (e *indexedError) Error() string { return e.err.Error() }
func (e *indexedError) Unwrap() error { return e.err }

// errorHeaders sets the headers an error carries: the index of a read
// that found no key, the oldest index of a compacted history.
func errorHeaders(w http.ResponseWriter, err error) {
	var ie *indexedError
	if errors.As(err, &ie) {
		w.Header().Set(api.HeaderIndex, strconv.FormatUint(ie.index, 10))
	}
	var ce *api.CompactedError
	if errors.As(err, &ce) {
		w.Header().Set(api.HeaderOldestIndex, strconv.FormatUint(ce.Oldest, 10))
	}
}

// kvFlags parses flag parameters by name.
func kvFlags(q url.Values, names ...string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, n := range names {
		v, err := queryFlag(q, n)
		if err != nil {
			return nil, err
		}
		out[n] = v
	}
	return out, nil
}

// getKV serves GET /v1/kv/{key}: the key, its value alone (?raw), or its
// events (?watch).
func (s *Server) getKV(r *http.Request) (any, error) {
	key, err := pathKey(r)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	opt, err := readOptions(q)
	if err != nil {
		return nil, err
	}
	f, err := kvFlags(q, "raw", "watch", "keys")
	if err != nil {
		return nil, err
	}
	switch {
	case f["watch"] && f["raw"]:
		return nil, badRequest("raw and watch cannot be used together: a watch answers events")
	case f["watch"]:
		return s.watchKV(r, opt, key, false, f["keys"])
	case f["raw"] && f["keys"]:
		return nil, badRequest("raw and keys cannot be used together: raw answers the value alone")
	case q.Has("limit"):
		return nil, badRequest("limit is a parameter of a watch (with ?watch) or of GET /v1/kv")
	}
	res, err := s.svc.KV(r.Context(), key, opt)
	if err != nil {
		return nil, err
	}
	if res.KV == nil {
		return nil, &indexedError{err: api.Errorf(api.CodeNotFound, "key %q does not exist (at index %d)", key, res.Index), index: res.Index}
	}
	if f["raw"] {
		h := http.Header{}
		h.Set("Content-Type", "application/octet-stream")
		h.Set(api.HeaderIndex, strconv.FormatUint(res.Index, 10))
		return &rawAnswer{header: h, body: res.KV.Value}, nil
	}
	if f["keys"] {
		res.KV.Value = nil
	}
	return indexed{res, res.Index}, nil
}

// listKV serves GET /v1/kv: one page of the keys under ?prefix=, or
// their events (?watch).
func (s *Server) listKV(r *http.Request) (any, error) {
	q := r.URL.Query()
	prefix := q.Get("prefix")
	if err := api.ValidatePrefix(prefix); err != nil {
		return nil, badRequest("%v", err)
	}
	opt, err := readOptions(q)
	if err != nil {
		return nil, err
	}
	f, err := kvFlags(q, "watch", "keys", "count")
	if err != nil {
		return nil, err
	}
	switch {
	case f["watch"] && (q.Has("after") || f["count"]):
		return nil, badRequest("after and count are parameters of a list, not of a watch")
	case f["watch"]:
		return s.watchKV(r, opt, prefix, true, f["keys"])
	case f["keys"] && f["count"]:
		return nil, badRequest("keys and count cannot be used together: count answers no keys")
	}
	lo := api.KVListOptions{ListOptions: ListOptions{ReadOptions: opt, Limit: api.DefaultKVListLimit, After: q.Get("after")},
		Prefix: prefix, Keys: f["keys"], Count: f["count"]}
	if lo.Limit, err = queryLimit(q, api.DefaultKVListLimit, api.MaxKVListLimit); err != nil {
		return nil, err
	}
	if err := checkMaxLen("after", lo.After, api.MaxNameLen); err != nil {
		return nil, err
	}
	res, err := s.svc.KVList(r.Context(), lo)
	if err != nil {
		return nil, err
	}
	return indexed{res, res.Index}, nil
}

// queryLimit parses ?limit=: 1..most, def when absent.
func queryLimit(q url.Values, def, most int) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		return 0, badRequest("bad limit %q: must be an integer from 1 to %d", v, most)
	}
	return n, nil
}

// watchKV serves a watch of a key, or of the keys under a prefix.
func (s *Server) watchKV(r *http.Request, opt ReadOptions, key string, prefix, keys bool) (any, error) {
	q := r.URL.Query()
	if !q.Has("index") {
		return nil, badRequest("a watch needs index: the index to watch after, from the read the watch follows (or the index of its last answer)")
	}
	limit, err := queryLimit(q, api.DefaultWatchLimit, api.MaxWatchLimit)
	if err != nil {
		return nil, err
	}
	res, err := s.svc.KVWatch(r.Context(), api.WatchOptions{ReadOptions: opt, Key: key, Prefix: prefix, Keys: keys, Limit: limit})
	if err != nil {
		return nil, err
	}
	return indexed{res, res.Index}, nil
}

// putKV serves PUT /v1/kv/{key}. The body is optional: none puts an
// empty value.
func (s *Server) putKV(r *http.Request) (any, error) {
	key := mux.Vars(r)["key"]
	var req api.KVPutRequest
	if err := decodeBody(r, &req, true); err != nil {
		return nil, err
	}
	if err := req.Validate(key); err != nil {
		return nil, invalid(err)
	}
	if err := s.ownSession(r, req.Session); err != nil {
		return nil, err
	}
	if err := s.allowGuard(r, req.Guard); err != nil {
		return nil, err
	}
	req.Owner = owner(r)
	return s.svc.PutKV(r.Context(), key, req)
}

// deleteKV serves DELETE /v1/kv/{key}?cas=N.
func (s *Server) deleteKV(r *http.Request) (any, error) {
	key, err := pathKey(r)
	if err != nil {
		return nil, err
	}
	d := api.KVDelete{Key: key}
	if v, ok := r.URL.Query()["cas"]; ok {
		n, err := strconv.ParseUint(v[0], 10, 64)
		if err != nil {
			return nil, badRequest("bad cas %q: must be the modify index of the key, a positive integer", v[0])
		}
		d.CAS = &n
	}
	return s.deleteKeys(r, d)
}

// deletePrefix serves DELETE /v1/kv?prefix=P: every key under P. Every
// key of the namespace (no prefix, or an empty one) only with ?all.
func (s *Server) deletePrefix(r *http.Request) (any, error) {
	q := r.URL.Query()
	all, err := queryFlag(q, "all")
	if err != nil {
		return nil, err
	}
	prefix := q.Get("prefix")
	switch {
	case all && prefix != "":
		return nil, badRequest("all deletes every key: give it without a prefix, or give a prefix without all")
	case !all && prefix == "":
		return nil, badRequest("DELETE /v1/kv deletes the keys under ?prefix=, which is missing or empty; to delete every key of the namespace, say ?all=true")
	}
	return s.deleteKeys(r, api.KVDelete{Key: prefix, Prefix: true})
}

// deleteKeys reads a delete's optional body, checks it and serves it.
func (s *Server) deleteKeys(r *http.Request, d api.KVDelete) (any, error) {
	if err := decodeBody(r, &d.KVDeleteRequest, true); err != nil {
		return nil, err
	}
	if err := d.Validate(); err != nil {
		return nil, invalid(err)
	}
	if err := s.ownSession(r, d.Session); err != nil {
		return nil, err
	}
	if err := s.allowGuard(r, d.Guard); err != nil {
		return nil, err
	}
	d.Owner = owner(r)
	return s.svc.DeleteKV(r.Context(), d)
}

// txn serves POST /v1/txn. The token's access to the keys it names is
// checked once the body is read: by the leader, since a follower
// forwards the body unread.
func (s *Server) txn(r *http.Request) (any, error) {
	var req api.TxnRequest
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if err := req.Validate(); err != nil {
		return nil, invalid(err)
	}
	if err := s.ownSession(r, req.Session); err != nil {
		return nil, err
	}
	if err := s.allowTxn(r, &req); err != nil {
		return nil, err
	}
	req.Owner = owner(r)
	return s.svc.Txn(r.Context(), req)
}

// allowGuard checks that the token may read the lock a guard names: a
// guard tells whether a token is current, as a check does.
func (s *Server) allowGuard(r *http.Request, g *api.Guard) error {
	if g == nil {
		return nil
	}
	return allow(r, acl.Action{Kind: acl.Lock, Name: g.Lock, Access: acl.Read})
}

// owner returns the accessor id of the request's token, which owns the
// keys it writes ("" with ACLs off).
func owner(r *http.Request) string {
	tok, _ := principal(r)
	return tok.AccessorID
}

// allow checks one action against the request's token (none: ACLs off).
func allow(r *http.Request, a acl.Action) error {
	tok, on := principal(r)
	if !on || acl.Allowed(tok, a) {
		return nil
	}
	return forbidden(tok, a)
}

// allowTxn checks the token against every key a transaction names: read
// for compares and gets, write for puts and deletes (admin for a delete
// of every key), read on the guard's lock.
func (s *Server) allowTxn(r *http.Request, req *api.TxnRequest) error {
	if _, on := principal(r); !on {
		return nil
	}
	key := func(name string, access acl.Access) acl.Action {
		return acl.Action{Kind: acl.Key, Name: name, Access: access}
	}
	var want []acl.Action
	for _, c := range req.Compare {
		want = append(want, key(c.Key, acl.Read))
	}
	for _, op := range append(append([]api.TxnOp(nil), req.Success...), req.Failure...) {
		switch {
		case op.Put != nil:
			want = append(want, key(op.Put.Key, acl.Write))
		case op.Delete != nil && op.Delete.Prefix && op.Delete.Key == "":
			want = append(want, acl.Action{Admin: true})
		case op.Delete != nil:
			want = append(want, key(op.Delete.Key, acl.Write))
		case op.Get != nil:
			want = append(want, key(op.Get.Key, acl.Read))
		}
	}
	for _, a := range want {
		if err := allow(r, a); err != nil {
			return err
		}
	}
	return s.allowGuard(r, req.Guard)
}

// bodyLimitOf is the largest request body route rt takes: a put's value
// or a transaction's values need more than api.MaxBody.
func bodyLimitOf(rt route) int {
	switch {
	case rt.method == http.MethodPut && rt.path == kvKeyPath:
		return api.MaxKVBody
	case rt.path == txnPath:
		return api.MaxTxnBody
	}
	return api.MaxBody
}

type bodyLimitKey struct{}

// withBodyLimit returns r carrying its route's body limit, which
// readBody and readAhead read (bodyLimit).
func withBodyLimit(r *http.Request, rt route) *http.Request {
	n := bodyLimitOf(rt)
	if n == api.MaxBody {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), bodyLimitKey{}, n))
}

// bodyLimit is the largest body r's route takes.
func bodyLimit(r *http.Request) int {
	if n, ok := r.Context().Value(bodyLimitKey{}).(int); ok {
		return n
	}
	return api.MaxBody
}

// The views of the namespace's answers for a token that is not admin:
// the ids of sessions it does not own are shortened, as everywhere.

func (v viewer) kv(kv api.KV) api.KV {
	kv.Session = v.id(kv.Session)
	return kv
}

func (v viewer) kvPtr(kv *api.KV) *api.KV {
	if kv == nil {
		return nil
	}
	c := v.kv(*kv)
	return &c
}

func (v viewer) kvs(kvs []api.KV) []api.KV {
	if kvs == nil {
		return nil
	}
	out := make([]api.KV, len(kvs))
	for i, kv := range kvs {
		out[i] = v.kv(kv)
	}
	return out
}

// kvView filters the answers of the namespace; ok is false for any other
// answer.
func (v viewer) kvView(body any) (any, bool) {
	switch b := body.(type) {
	case api.KVRead:
		b.KV = v.kvPtr(b.KV)
		return b, true
	case api.KVList:
		b.KVs = v.kvs(b.KVs)
		return b, true
	case api.KVEvents:
		evs := make([]api.Event, len(b.Events))
		for i, e := range b.Events {
			e.KV, e.Prev = v.kv(e.KV), v.kvPtr(e.Prev)
			evs[i] = e
		}
		b.Events = evs
		return b, true
	case api.KVPutResponse:
		b.KV, b.Prev = v.kv(b.KV), v.kvPtr(b.Prev)
		return b, true
	case api.TxnResponse:
		rs := make([]api.TxnResult, len(b.Results))
		for i, x := range b.Results {
			x.KV, x.Prev, x.KVs = v.kvPtr(x.KV), v.kvPtr(x.Prev), v.kvs(x.KVs)
			rs[i] = x
		}
		b.Results = rs
		return b, true
	}
	return body, false
}
