package fsm

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// ErrStaleToken is returned when a transaction's guard names a token of a
// lock that a holder with a higher token holds now.
var ErrStaleToken = errors.New("fsm: stale token")

// MaxTxnOps bounds the compares and operations of a transaction, both
// branches counted.
const MaxTxnOps = 128

// Txn is the one write of the namespace (OpTxn): if every compare holds,
// the Success operations run, else the Failure ones, in order, each
// seeing what those before it did; all in one entry, whose index is the
// ModifyIndex of every key it writes.
//
// A transaction that is refused (Result.Err) changes nothing: a bad
// command, a session it names that does not exist, a repeated request
// number (ErrRepeated), a guard that does not hold (ErrNotHolder,
// ErrStaleToken), an owner that is no token (ErrOwnerNotFound), a branch
// that would take its owner past a limit (ErrQuotaExceeded, quota.go). A
// failed compare is no refusal: the Failure branch runs.
//
// Guard, if set, makes the transaction apply only while a holder of the
// lock Guard.Lock (in the locks, not the elections) holds it with exactly
// Guard.Token: ErrStaleToken when a holder has a higher token, ErrNotHolder
// otherwise (the lock is free, or held under other tokens).
type Txn struct {
	Compare []Compare `json:"compare,omitempty"`
	Success []TxnOp   `json:"success,omitempty"`
	Failure []TxnOp   `json:"failure,omitempty"`
	Guard   *Guard    `json:"guard,omitempty"`
}

// Guard names a lock and a fencing token (see Txn).
type Guard struct {
	Lock  string `json:"lock"`
	Token uint64 `json:"token"`
}

// CompareTarget is what a compare looks at.
type CompareTarget string

// Compare targets. A key that does not exist has version, create index
// and modify index 0, session "" and exists 0; a compare of its value
// never holds, whatever the operator.
const (
	TargetValue   CompareTarget = "value"        // Compare.Value, bytewise
	TargetVersion CompareTarget = "version"      // Compare.Number
	TargetCreate  CompareTarget = "create_index" // Compare.Number
	TargetModify  CompareTarget = "modify_index" // Compare.Number
	TargetSession CompareTarget = "session"      // Compare.Session
	TargetExists  CompareTarget = "exists"       // Compare.Number: 1 exists, 0 does not
)

// CompareOp is a compare's operator: the key's side is on the left.
type CompareOp string

// Compare operators.
const (
	Equal    CompareOp = "="
	NotEqual CompareOp = "!="
	Less     CompareOp = "<"
	Greater  CompareOp = ">"
)

// Compare tests one key. Only the field its Target names may be set.
type Compare struct {
	Key     []byte        `json:"key"`
	Target  CompareTarget `json:"target"`
	Op      CompareOp     `json:"op"`
	Value   []byte        `json:"value,omitempty"`
	Number  uint64        `json:"number,omitempty"`
	Session string        `json:"session,omitempty"`
}

// TxnOpType names an operation.
type TxnOpType string

// Operations.
const (
	TxnPut    TxnOpType = "put"
	TxnDelete TxnOpType = "delete"
	TxnGet    TxnOpType = "get"
)

// TxnOp is one operation of a transaction. Key and End name what it acts
// on: with End empty the one key Key (not empty); else the keys in
// [Key, End), every key from Key on when End is the single byte 0 (so
// Key empty and End {0} is every key); PrefixEnd gives the End of a
// prefix. A put names one key; with Sequential it creates the key Key
// followed by a number of 20 digits, zero-padded, above that of any
// sequential put before (in the whole namespace, for ever). With Session
// the key is ephemeral: the entry that ends the session deletes it; a put
// without one detaches a key from its session. Limit (0 for none),
// KeysOnly and CountOnly shape a get. Only the fields of the operation's
// type may be set.
type TxnOp struct {
	Type       TxnOpType `json:"type"`
	Key        []byte    `json:"key,omitempty"`
	End        []byte    `json:"end,omitempty"`
	Value      []byte    `json:"value,omitempty"`
	Flags      uint64    `json:"flags,omitempty"`
	Session    string    `json:"session,omitempty"`
	Sequential bool      `json:"sequential,omitempty"`
	Limit      int       `json:"limit,omitempty"`
	KeysOnly   bool      `json:"keys_only,omitempty"`
	CountOnly  bool      `json:"count_only,omitempty"`
}

// TxnResult is what a transaction did: which branch ran, and a result per
// operation of that branch.
type TxnResult struct {
	Succeeded bool
	Results   []OpResult
}

// OpResult is one operation's result. A put: KV, the record stored (for a
// sequential put its Key is the name made), and Prev, the record it
// replaced (nil if none). A delete: Count, and the records deleted in
// KVs. A get: KVs in key order (without values if KeysOnly, none if
// CountOnly), Count (how many KVs holds, or with CountOnly how many keys
// the range has) and More (the range has keys past Limit).
type OpResult struct {
	Type  TxnOpType
	KV    *KV
	Prev  *KV
	KVs   []KV
	Count int
	More  bool
}

// PrefixEnd returns the End of the range of keys that start with prefix:
// the prefix with its last byte below 0xff incremented and what follows
// it dropped, or {0} (every key) when there is none.
func PrefixEnd(prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] < 0xff {
			end := bytes.Clone(prefix[:i+1])
			end[i]++
			return end
		}
	}
	return []byte{0}
}

// Put is a put of value under key.
func Put(key, value []byte) TxnOp { return TxnOp{Type: TxnPut, Key: key, Value: value} }

// Delete is a delete of one key.
func Delete(key []byte) TxnOp { return TxnOp{Type: TxnDelete, Key: key} }

// Get is a get of one key.
func Get(key []byte) TxnOp { return TxnOp{Type: TxnGet, Key: key} }

// CAS is the compare of a check-and-set: the key's modify index is n, and
// for n = 0 the key does not exist.
func CAS(key []byte, n uint64) Compare {
	return Compare{Key: key, Target: TargetModify, Op: Equal, Number: n}
}

// checkTxn refuses what no state could apply.
func checkTxn(c Command) error {
	t := c.Txn
	switch {
	case t == nil:
		return refuse("%v: no transaction", c.Op).Err
	case len(t.Compare)+len(t.Success)+len(t.Failure) > MaxTxnOps:
		return refuse("%v: %d compares and operations (at most %d)", c.Op, len(t.Compare)+len(t.Success)+len(t.Failure), MaxTxnOps).Err
	case c.Seq != 0 && c.Session == "":
		return refuse("%v: a request number without a session", c.Op).Err
	}
	if g := t.Guard; g != nil && (g.Lock == "" || g.Token == 0 || !utf8.ValidString(g.Lock)) {
		return refuse("%v: guard without a lock or a token", c.Op).Err
	}
	for i, cmp := range t.Compare {
		if err := cmp.check(); err != nil {
			return refuse("%v: compare %d: %v", c.Op, i, err).Err
		}
	}
	for i, op := range slices.Concat(t.Success, t.Failure) {
		if err := op.check(); err != nil {
			return refuse("%v: operation %d: %v", c.Op, i, err).Err
		}
	}
	return nil
}

func checkKey(key []byte) error {
	if len(key) == 0 || len(key) > MaxKeyLen {
		return fmt.Errorf("key of %d bytes (want 1 to %d)", len(key), MaxKeyLen)
	}
	return nil
}

func (c Compare) check() error {
	if err := checkKey(c.Key); err != nil {
		return err
	}
	switch c.Op {
	case Equal, NotEqual, Less, Greater:
	default:
		return fmt.Errorf("operator %q", c.Op)
	}
	value, number, session := false, false, false
	switch c.Target {
	case TargetValue:
		value = true
	case TargetVersion, TargetCreate, TargetModify:
		number = true
	case TargetExists:
		number = true
		if c.Number > 1 {
			return fmt.Errorf("exists compared with %d (want 0 or 1)", c.Number)
		}
	case TargetSession:
		session = true
	default:
		return fmt.Errorf("target %q", c.Target)
	}
	switch {
	case len(c.Value) > MaxValueLen:
		return fmt.Errorf("value of %d bytes (at most %d)", len(c.Value), MaxValueLen)
	case !value && len(c.Value) > 0, !number && c.Number != 0, !session && c.Session != "":
		return fmt.Errorf("a field %s does not compare", c.Target)
	case !utf8.ValidString(c.Session):
		return errors.New("invalid UTF-8")
	}
	return nil
}

func (op TxnOp) check() error {
	var err error
	switch op.Type {
	case TxnPut:
		switch {
		case op.Sequential && len(op.Key)+seqDigits > MaxKeyLen:
			err = fmt.Errorf("sequential key prefix of %d bytes (at most %d)", len(op.Key), MaxKeyLen-seqDigits)
		case !op.Sequential:
			err = checkKey(op.Key)
		}
		switch {
		case err != nil:
		case len(op.End) > 0 || op.Limit != 0 || op.KeysOnly || op.CountOnly:
			err = errors.New("a put of a range, or with options of a get")
		case len(op.Value) > MaxValueLen:
			err = fmt.Errorf("value of %d bytes (at most %d)", len(op.Value), MaxValueLen)
		case !utf8.ValidString(op.Session):
			err = errors.New("invalid UTF-8")
		}
		return err
	case TxnDelete, TxnGet:
	default:
		return fmt.Errorf("operation %q", op.Type)
	}
	switch {
	case len(op.End) == 0:
		err = checkKey(op.Key)
	case len(op.Key) > MaxKeyLen || len(op.End) > MaxKeyLen:
		err = fmt.Errorf("range bound over %d bytes", MaxKeyLen)
	}
	switch {
	case err != nil:
	case len(op.Value) > 0 || op.Flags != 0 || op.Session != "" || op.Sequential:
		err = fmt.Errorf("a %s with fields of a put", op.Type)
	case op.Type == TxnDelete && (op.Limit != 0 || op.KeysOnly || op.CountOnly):
		err = errors.New("a delete with options of a get")
	case op.Limit < 0:
		err = fmt.Errorf("limit %d", op.Limit)
	}
	return err
}

// holds reports whether the compare holds for kv (nil: the key does not
// exist).
func (c Compare) holds(kv *KV) bool {
	var r int
	switch c.Target {
	case TargetValue:
		if kv == nil {
			return false
		}
		r = bytes.Compare(kv.Value, c.Value)
	case TargetSession:
		r = strings.Compare(orZero(kv).Session, c.Session)
	case TargetExists:
		r = cmp.Compare(min(orZero(kv).ModifyIndex, 1), c.Number)
	case TargetVersion:
		r = cmp.Compare(orZero(kv).Version, c.Number)
	case TargetCreate:
		r = cmp.Compare(orZero(kv).CreateIndex, c.Number)
	case TargetModify:
		r = cmp.Compare(orZero(kv).ModifyIndex, c.Number)
	}
	switch c.Op {
	case Equal:
		return r == 0
	case NotEqual:
		return r != 0
	case Less:
		return r < 0
	}
	return r > 0
}

func orZero(kv *KV) *KV {
	if kv == nil {
		return &KV{}
	}
	return kv
}

// txnPlan is what a transaction does, decided from the state before it
// changes anything: the branch that runs, and the object its request
// number is kept under.
type txnPlan struct {
	ops       []TxnOp
	succeeded bool
	object    string
}

// planTxn decides a transaction, reading the state only: every refusal is
// found here, before anything changes, so a refused transaction changes
// nothing and Refusal tells each in advance.
func (st *state) planTxn(o op, c Command) (txnPlan, error) {
	if err := checkTxn(c); err != nil {
		return txnPlan{}, err
	}
	if err := st.checkOwner(c); err != nil {
		return txnPlan{}, err
	}
	t := c.Txn
	p := txnPlan{object: txnObject(t)}
	if c.Session != "" && !st.sessions.has(c.Session) {
		return p, sessionNotFound(c.Session)
	}
	if st.seen(c.Session, p.object, c.Seq) && !o.unsafe.kvForgetSeq() {
		return p, fmt.Errorf("%w: %v: request %d", ErrRepeated, c.Op, c.Seq)
	}
	if g := t.Guard; g != nil {
		if err := st.checkGuard(*g); err != nil && !o.unsafe.staleGuard(*g) {
			return p, err
		}
	}
	p.succeeded = true
	for _, cmp := range t.Compare {
		kv, _ := st.kv.get(cmp.Key)
		if !cmp.holds(kv) {
			p.succeeded = false
			break
		}
	}
	p.ops = t.Success
	if !p.succeeded {
		p.ops = t.Failure
	}
	for _, op := range p.ops {
		if op.Type == TxnPut && op.Session != "" && !st.sessions.has(op.Session) {
			return p, sessionNotFound(op.Session)
		}
	}
	if err := st.checkQuota(c.Owner, p.ops); err != nil {
		return p, err
	}
	return p, nil
}

// checkGuard checks a guard against the lock's holders.
func (st *state) checkGuard(g Guard) error {
	l := st.locks.peek(g.Lock)
	switch {
	case slices.ContainsFunc(l.Holders, func(h Holder) bool { return h.Token == g.Token }):
		return nil
	case slices.ContainsFunc(l.Holders, func(h Holder) bool { return h.Token > g.Token }):
		return fmt.Errorf("%w: %s: token %d, held since under a higher one", ErrStaleToken, g.Lock, g.Token)
	}
	return fmt.Errorf("%w: %s: no holder with token %d", ErrNotHolder, g.Lock, g.Token)
}

// txnObject names the object a transaction's request number is kept
// under in its session's table (seq.go): "k/" and the first key the
// transaction names (its first compare's, else its first operation's;
// a sequential put's is its prefix), in base64 so that any bytes make a
// string a snapshot keeps as it is. A retry names the same key, so it is
// found. Per key rather than one number for all of a session's writes: a
// session's writes to different keys may run concurrently, each retried,
// without a later one making an earlier one look applied; only writes
// whose first keys are the same must be issued one after the other, as a
// client does anyway to know what it wrote. The session's window bounds
// these numbers as it does those of locks (they count as objects it let
// go of), and so does its floor.
func txnObject(t *Txn) string {
	var key []byte
	switch {
	case len(t.Compare) > 0:
		key = t.Compare[0].Key
	case len(t.Success) > 0:
		key = t.Success[0].Key
	case len(t.Failure) > 0:
		key = t.Failure[0].Key
	}
	return kvSeqPrefix + base64.RawURLEncoding.EncodeToString(key)
}

// kvSeqPrefix starts the names of transactions' objects in a seqTable.
const kvSeqPrefix = "k/"

// txn runs OpTxn.
func (st *state) txn(o op, c Command) Result {
	p, err := st.planTxn(o, c)
	if err != nil {
		return Result{Err: err}
	}
	if c.Seq != 0 {
		st.noteIdleSeq(c.Session, p.object, c.Seq)
	}
	res := &TxnResult{Succeeded: p.succeeded, Results: make([]OpResult, len(p.ops))}
	for i, op := range p.ops {
		res.Results[i] = st.kv.run(o, op, c.Owner)
	}
	return Result{Txn: res}
}

// run applies one operation of a transaction's branch, written by the
// token owner ("" for none).
func (k *kvStore) run(o op, op TxnOp, owner string) OpResult {
	res := OpResult{Type: op.Type}
	switch op.Type {
	case TxnPut:
		key := op.Key
		if op.Sequential {
			key = k.sequentialName(op.Key)
		}
		kv, prev := k.put(o, key, op.Value, op.Flags, op.Session, owner)
		c := kv.clone()
		res.KV = &c
		if prev != nil {
			p := prev.clone()
			res.Prev = &p
		}
	case TxnDelete:
		var gone []*KV
		k.span(op.Key, op.End, 0, func(kv *KV) { gone = append(gone, kv) })
		for _, kv := range gone {
			k.remove(o, kv)
			res.KVs = append(res.KVs, kv.clone())
		}
		res.Count = len(gone)
	case TxnGet:
		res.KVs, res.Count, res.More = k.read(op.Key, op.End, op.Limit, op.KeysOnly, op.CountOnly)
	}
	return res
}

// read returns the records of a range as a get does (see OpResult).
func (k *kvStore) read(start, end []byte, limit int, keysOnly, countOnly bool) (kvs []KV, count int, more bool) {
	if countOnly {
		k.span(start, end, 0, func(*KV) { count++ })
		return nil, count, false
	}
	more = k.span(start, end, limit, func(kv *KV) {
		c := kv.clone()
		if keysOnly {
			c.Value = nil
		}
		kvs = append(kvs, c)
	})
	return kvs, len(kvs), more
}

// sequentialName returns prefix followed by the next number of the
// namespace's counter that names no existing key.
func (k *kvStore) sequentialName(prefix []byte) []byte {
	for {
		k.seq++
		name := fmt.Appendf(bytes.Clone(prefix), "%0*d", seqDigits, k.seq)
		if _, ok := k.get(name); !ok {
			return name
		}
	}
}
