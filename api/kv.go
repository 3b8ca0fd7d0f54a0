package api

import (
	"errors"
	"fmt"
	"strings"
)

// The namespace of small files over HTTP: GET, PUT and DELETE of
// /v1/kv/{key}, GET and DELETE of /v1/kv?prefix=, POST /v1/txn, and
// watches (GET ...?watch). Keys follow the rule of lock names
// (ValidateKey); values are bytes, base64 in JSON. The types map onto
// etcd's v3 API: a KV onto mvccpb.KeyValue (indexes for revisions,
// version, session for a lease), a TxnRequest onto a Txn (compares,
// success, failure), KVEvents onto a WatchResponse.

// KV is one key and its value. CreateIndex and ModifyIndex are the
// indexes of the entries that created the key and last changed it;
// Version counts its changes since it was created (1 on create). Session
// is the session that owns the key (an ephemeral key: the entry that
// ends the session deletes it), "" for none; Flags is the client's own.
// Value is absent when empty, and in answers that leave values out
// (?keys).
type KV struct {
	Key         string `json:"key"`
	Value       []byte `json:"value,omitempty"`
	CreateIndex uint64 `json:"create_index"`
	ModifyIndex uint64 `json:"modify_index"`
	Version     uint64 `json:"version"`
	Session     string `json:"session,omitempty"`
	Flags       uint64 `json:"flags,omitempty"`
}

// KVRead answers GET /v1/kv/{key}: the record and the index the read
// saw, which a blocking query compares: the key's modify index, or for a
// key that does not exist (KV nil, answered 404 over HTTP with the index
// in the X-Lockd-Index header) the index of the last change of any key.
type KVRead struct {
	KV    *KV    `json:"kv,omitempty"`
	Index uint64 `json:"index"`
}

// KVList answers GET /v1/kv?prefix=: one page of the keys that start
// with the prefix, in key order. Count is how many KVs holds, or with
// ?count how many keys the prefix has after the cursor (KVs is then
// empty). Index is the index of the last change of any key (what a
// blocking query on the list compares); Next is set when more keys
// follow, the cursor to pass as ?after=.
type KVList struct {
	KVs   []KV   `json:"kvs"`
	Count int    `json:"count"`
	Index uint64 `json:"index"`
	Next  string `json:"next,omitempty"`
}

// KVListOptions are the query parameters of GET /v1/kv: the list's
// (read options, limit, after), the prefix, and Keys (records without
// values) or Count (only the number of keys).
type KVListOptions struct {
	ListOptions
	Prefix      string
	Keys, Count bool
}

// Guard makes a write apply only while a holder of the lock Lock holds it
// with exactly the fencing token Token: refused stale_token once a higher
// token holds it, not_holder otherwise (free, or held under other
// tokens). It makes the namespace a fenced resource.
type Guard struct {
	Lock  string `json:"lock"`
	Token uint64 `json:"token"`
}

// KVPutRequest is the body of PUT /v1/kv/{key}. Session names the
// writer's session: needed for Ephemeral (the key is owned by the session
// and deleted in the entry that ends it) and for Seq (a request number,
// as for locks); a put without Ephemeral leaves the key owned by no
// session. CAS, when set, makes the put apply only if the key's modify
// index is *CAS (0: only if the key does not exist); failing that,
// nothing is written and the answer is cas_failed. Sequential takes the
// path's key as a prefix and appends a 20-digit number from the
// namespace's counter, which never repeats.
type KVPutRequest struct {
	Value      []byte  `json:"value,omitempty"`
	Flags      uint64  `json:"flags,omitempty"`
	Session    string  `json:"session,omitempty"`
	Ephemeral  bool    `json:"ephemeral,omitempty"`
	CAS        *uint64 `json:"cas,omitempty"`
	Sequential bool    `json:"sequential,omitempty"`
	Guard      *Guard  `json:"guard,omitempty"`
	Seq        uint64  `json:"seq,omitempty"`
	// Owner is the accessor id of the ACL token the request came with,
	// set by the node that serves it, never by the client: the key
	// belongs to that token and counts against its limits.
	Owner string `json:"-"`
}

// KVPutResponse answers a put: the record written (for a sequential put,
// its key is the name made), the record it replaced (nil if none), and
// the index of the entry, which is the record's modify index.
type KVPutResponse struct {
	KV    KV     `json:"kv"`
	Prev  *KV    `json:"prev,omitempty"`
	Index uint64 `json:"index"`
}

// KVDeleteRequest is the optional body of DELETE /v1/kv/{key} and DELETE
// /v1/kv: the writer's session (for Seq), a request number, a guard.
type KVDeleteRequest struct {
	Session string `json:"session,omitempty"`
	Seq     uint64 `json:"seq,omitempty"`
	Guard   *Guard `json:"guard,omitempty"`
}

// KVDelete is what a delete asks: one key (Key), or with Prefix set every
// key that starts with Key ("" with Prefix: every key), and for one key
// an optional CAS on its modify index.
type KVDelete struct {
	KVDeleteRequest
	Key    string
	Prefix bool
	CAS    *uint64
	// Owner is the accessor id of the request's ACL token (see
	// KVPutRequest.Owner).
	Owner string
}

// KVDeleteResponse answers a delete: how many keys it deleted, and the
// index of its entry.
type KVDeleteResponse struct {
	Deleted int    `json:"deleted"`
	Index   uint64 `json:"index"`
}

// Compare targets and operators of a transaction (Compare).
const (
	TargetValue       = "value"
	TargetVersion     = "version"
	TargetCreateIndex = "create_index"
	TargetModifyIndex = "modify_index"
	TargetSession     = "session"
	TargetExists      = "exists"
)

// CompareTargets and CompareOps list the valid targets and operators.
var (
	CompareTargets = []string{TargetValue, TargetVersion, TargetCreateIndex, TargetModifyIndex, TargetSession, TargetExists}
	CompareOps     = []string{"=", "!=", "<", ">"}
)

// Compare tests one key of a transaction: the key's Target, on the left,
// against the one field that target takes: Value (bytes, for "value"),
// Number (for "version", "create_index", "modify_index", and "exists",
// 1 or 0) or Session (for "session"). A key that does not exist has
// version, indexes and exists 0 and session ""; a compare of its value
// never holds.
type Compare struct {
	Key     string  `json:"key"`
	Target  string  `json:"target"`
	Op      string  `json:"op"`
	Value   []byte  `json:"value,omitempty"`
	Number  *uint64 `json:"number,omitempty"`
	Session *string `json:"session,omitempty"`
}

// TxnOp is one operation of a transaction: exactly one of Put, Delete
// and Get.
type TxnOp struct {
	Put    *TxnPut   `json:"put,omitempty"`
	Delete *TxnRange `json:"delete,omitempty"`
	Get    *TxnRange `json:"get,omitempty"`
}

// TxnPut is a put in a transaction: as KVPutRequest, with Ephemeral
// owning the key by the transaction's session.
type TxnPut struct {
	Key        string `json:"key"`
	Value      []byte `json:"value,omitempty"`
	Flags      uint64 `json:"flags,omitempty"`
	Ephemeral  bool   `json:"ephemeral,omitempty"`
	Sequential bool   `json:"sequential,omitempty"`
}

// TxnRange names what a delete or get acts on: the one key Key, or with
// Prefix every key that starts with Key ("" with Prefix: every key). A
// get may set Limit (the most keys it returns; 0: all), Keys (records
// without values) and Count (only the number of keys); a delete may not.
type TxnRange struct {
	Key    string `json:"key"`
	Prefix bool   `json:"prefix,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Keys   bool   `json:"keys,omitempty"`
	Count  bool   `json:"count,omitempty"`
}

// TxnRequest is the body of POST /v1/txn: if every compare holds, the
// Success operations run, else the Failure ones, in order, each seeing
// what those before it did, all in one entry. Guard, Session and Seq as
// for a put; Session also owns the ephemeral puts.
type TxnRequest struct {
	Compare []Compare `json:"compare,omitempty"`
	Success []TxnOp   `json:"success,omitempty"`
	Failure []TxnOp   `json:"failure,omitempty"`
	Guard   *Guard    `json:"guard,omitempty"`
	Session string    `json:"session,omitempty"`
	Seq     uint64    `json:"seq,omitempty"`
	// Owner is the accessor id of the request's ACL token (see
	// KVPutRequest.Owner): the keys it puts belong to that token.
	Owner string `json:"-"`
}

// TxnResult is one operation's result, by Type ("put", "delete" or
// "get"). A put: KV, the record written, and Prev, the record it
// replaced. A delete: Count, the keys deleted. A get: KVs in key order
// (without values with Keys, none with Count), Count (how many KVs holds,
// or with Count how many keys there are) and More (keys past Limit).
type TxnResult struct {
	Type  string `json:"type"`
	KV    *KV    `json:"kv,omitempty"`
	Prev  *KV    `json:"prev,omitempty"`
	KVs   []KV   `json:"kvs,omitempty"`
	Count int    `json:"count,omitempty"`
	More  bool   `json:"more,omitempty"`
}

// TxnResponse answers POST /v1/txn: which branch ran, a result per
// operation of that branch, and the index of the entry.
type TxnResponse struct {
	Succeeded bool        `json:"succeeded"`
	Results   []TxnResult `json:"results"`
	Index     uint64      `json:"index"`
}

// WatchOptions are the query parameters of a watch (GET
// /v1/kv/{key}?watch, GET /v1/kv?prefix=P&watch): the events of the key
// (or of the keys that start with Key, with Prefix) after ReadOptions.Index,
// waiting up to ReadOptions.Wait for one; at most Limit events (whole
// entries: one entry's events are never split), without values with Keys.
type WatchOptions struct {
	ReadOptions
	Key    string
	Prefix bool
	Keys   bool
	Limit  int
}

// Event is one change of a key: Type "put" or "delete", KV the record
// after it (for a delete, the key and the entry's index as its modify
// index), Prev the record before it (absent if the key did not exist).
// Index is the index of the entry that made the change.
type Event struct {
	Index uint64 `json:"index"`
	Type  string `json:"type"`
	KV    KV     `json:"kv"`
	Prev  *KV    `json:"prev,omitempty"`
}

// KVEvents answers a watch: the events after the index asked for, in
// order, and Index, the index to pass next: a watcher that passes each
// answer's Index as the next ?index= sees every change once. More says
// the answer stopped at its limit (Index is then its last event's).
type KVEvents struct {
	Events []Event `json:"events"`
	Index  uint64  `json:"index"`
	More   bool    `json:"more,omitempty"`
}

// CompactedError is the error of a watch from an index the history no
// longer reaches: events after Oldest are the oldest it can answer. It
// wraps an *Error with CodeCompacted; over HTTP, the header
// HeaderOldestIndex carries Oldest.
type CompactedError struct {
	Oldest uint64
}

func (e *CompactedError) Error() string { return e.err().Message }

// Unwrap returns the *Error the client sees.
func (e *CompactedError) Unwrap() error { return e.err() }

func (e *CompactedError) err() *Error {
	return Errorf(CodeCompacted, "the history of the namespace no longer reaches back to that index: the oldest index a watch may start after is %d; read the keys again and watch from the index of that read", e.Oldest)
}

// HeaderIndex carries, on the answers of GET /v1/kv/{key} (a 404 and a
// ?raw value included), GET /v1/kv and watches, the index the body has
// as "index".
const HeaderIndex = "X-Lockd-Index"

// HeaderOldestIndex carries, on a compacted answer, the oldest index a
// watch may start after.
const HeaderOldestIndex = "X-Lockd-Oldest-Index"

// ValidateKey checks a key of the namespace: the rule of lock names
// (ValidateName).
func ValidateKey(key string) error {
	if err := ValidateName(key); err != nil {
		return errors.New("key" + strings.TrimPrefix(err.Error(), "name"))
	}
	return nil
}

// ValidatePrefix checks a prefix of keys: up to MaxNameLen bytes of the
// characters of names; it may be empty, and end anywhere in a segment.
func ValidatePrefix(prefix string) error {
	if len(prefix) > MaxNameLen {
		return fmt.Errorf("prefix is %d bytes long; the limit is %d", len(prefix), MaxNameLen)
	}
	for i := 0; i < len(prefix); i++ {
		c := prefix[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '/' || c == '-') {
			return errors.New("prefix" + strings.TrimPrefix(badCharacter(prefix, i).Error(), "name"))
		}
	}
	return nil
}

// seqDigits is the width of the number a sequential put appends.
const seqDigits = 20

// validatePutKey checks the key of a put: a key, or for a sequential put
// a prefix that leaves room for the number.
func validatePutKey(key string, sequential bool) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if sequential && len(key)+seqDigits > MaxNameLen {
		return fmt.Errorf("sequential key prefix is %d bytes long; the limit is %d, leaving room for the %d digits appended", len(key), MaxNameLen-seqDigits, seqDigits)
	}
	return nil
}

// Validate checks a put of key: the key, the value's length, and fields
// that need others.
func (r *KVPutRequest) Validate(key string) error {
	if err := validatePutKey(key, r.Sequential); err != nil {
		return err
	}
	switch {
	case len(r.Value) > MaxKVValueLen:
		return sizeErrorf("value is %d bytes long; the limit is %d", len(r.Value), MaxKVValueLen)
	case r.Ephemeral && r.Session == "":
		return errors.New("ephemeral needs session: the session that owns the key")
	case r.Seq != 0 && r.Session == "":
		return errors.New("seq needs session: request numbers are kept per session")
	case r.Sequential && r.CAS != nil:
		return errors.New("cas and sequential cannot be used together: a sequential put always creates a new key")
	}
	return r.Guard.validate()
}

// validateRange checks a key, or with prefix a prefix of keys.
func validateRange(key string, prefix bool) error {
	if prefix {
		return ValidatePrefix(key)
	}
	return ValidateKey(key)
}

// Validate checks a delete.
func (d *KVDelete) Validate() error {
	switch err := validateRange(d.Key, d.Prefix); {
	case err != nil:
		return err
	case d.Prefix && d.CAS != nil:
		return errors.New("cas applies to one key, not to a prefix")
	case d.CAS != nil && *d.CAS == 0:
		return errors.New("cas=0 would delete the key only if it does not exist: give the modify index of the key to delete")
	case d.Seq != 0 && d.Session == "":
		return errors.New("seq needs session: request numbers are kept per session")
	}
	return d.Guard.validate()
}

func (g *Guard) validate() error {
	switch {
	case g == nil:
		return nil
	case g.Token == 0:
		return errors.New("guard.token must be a positive integer: a fencing token is the index of a Raft entry")
	}
	if err := ValidateName(g.Lock); err != nil {
		return fmt.Errorf("guard.lock: %w", err)
	}
	return nil
}

// Validate checks a transaction: its size (MaxTxnOps compares and
// operations in all), every compare's key, target, operator and field,
// and every operation's fields. The error names the field at fault
// ("compare[1].target", "success[0].put.key").
func (r *TxnRequest) Validate() error {
	if n := len(r.Compare) + len(r.Success) + len(r.Failure); n > MaxTxnOps {
		return fmt.Errorf("the transaction has %d compares and operations; the limit is %d", n, MaxTxnOps)
	}
	for i, c := range r.Compare {
		if err := c.validate(); err != nil {
			return fmt.Errorf("compare[%d].%w", i, err)
		}
	}
	for _, branch := range []struct {
		name string
		ops  []TxnOp
	}{{"success", r.Success}, {"failure", r.Failure}} {
		for i, op := range branch.ops {
			if err := op.validate(r.Session); err != nil {
				return fmt.Errorf("%s[%d].%w", branch.name, i, err)
			}
		}
	}
	if r.Seq != 0 && r.Session == "" {
		return errors.New("seq needs session: request numbers are kept per session")
	}
	return r.Guard.validate()
}

func (c Compare) validate() error {
	if err := ValidateKey(c.Key); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	if !contains(CompareOps, c.Op) {
		return fmt.Errorf("op: %q is not an operator: use one of %s", c.Op, strings.Join(CompareOps, " "))
	}
	var field string
	switch c.Target {
	case TargetValue:
		field = "value"
	case TargetVersion, TargetCreateIndex, TargetModifyIndex, TargetExists:
		field = "number"
	case TargetSession:
		field = "session"
	default:
		return fmt.Errorf("target: %q is not a target: use one of %s", c.Target, strings.Join(CompareTargets, ", "))
	}
	has := map[string]bool{"value": c.Value != nil, "number": c.Number != nil, "session": c.Session != nil}
	for _, f := range []string{"value", "number", "session"} {
		if has[f] && f != field {
			return fmt.Errorf("%s: target %q compares %s, not %s", f, c.Target, field, f)
		}
	}
	switch {
	case field == "number" && c.Number == nil:
		return fmt.Errorf("number: target %q needs a number", c.Target)
	case field == "session" && c.Session == nil:
		return errors.New("session: target \"session\" needs a session (\"\" for none)")
	case c.Target == TargetExists && *c.Number > 1:
		return fmt.Errorf("number: target \"exists\" compares with 1 (exists) or 0 (does not), not %d", *c.Number)
	case len(c.Value) > MaxKVValueLen:
		return sizeErrorf("value: %d bytes long; the limit is %d", len(c.Value), MaxKVValueLen)
	}
	return nil
}

func (op TxnOp) validate(session string) error {
	n := 0
	for _, set := range []bool{op.Put != nil, op.Delete != nil, op.Get != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("op: an operation has exactly one of put, delete and get")
	}
	switch {
	case op.Put != nil:
		p := op.Put
		if err := validatePutKey(p.Key, p.Sequential); err != nil {
			return fmt.Errorf("put.key: %w", err)
		}
		switch {
		case len(p.Value) > MaxKVValueLen:
			return sizeErrorf("put.value: %d bytes long; the limit is %d", len(p.Value), MaxKVValueLen)
		case p.Ephemeral && session == "":
			return errors.New("put.ephemeral: needs the transaction's session, which owns the key")
		}
	case op.Delete != nil:
		if err := op.Delete.validate(); err != nil {
			return fmt.Errorf("delete.%w", err)
		}
		if op.Delete.Limit != 0 || op.Delete.Keys || op.Delete.Count {
			return errors.New("delete: limit, keys and count are options of a get")
		}
	default:
		if err := op.Get.validate(); err != nil {
			return fmt.Errorf("get.%w", err)
		}
		if op.Get.Limit < 0 {
			return fmt.Errorf("get.limit: %d is negative", op.Get.Limit)
		}
	}
	return nil
}

func (r *TxnRange) validate() error {
	if err := validateRange(r.Key, r.Prefix); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
