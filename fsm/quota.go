package fsm

import (
	"bytes"
	"errors"
	"fmt"
)

// Limits of tokens on the namespace. A key belongs to the ACL token that
// wrote it last (KV.Owner, the token's accessor id; Command.Owner of the
// transaction that put it), and counts against that token's limits
// (acl.Token.MaxKeys, MaxBytes) in keys and in bytes of key and value for
// as long as it exists. So:
//
//   - a put of a new key adds it to the writer's count; a put over a key
//     of the writer's own counts the change of its size; a put over
//     another token's key (or a key of no token) moves the key, whole, to
//     the writer, and gives it back to the token that had it;
//   - a delete, the end of the session of an ephemeral key (destroy or
//     expiry) and a delete of a prefix give the key back to its owner,
//     whoever deletes it;
//   - a transaction that would take its writer past a limit it grows
//     towards is refused whole (ErrQuotaExceeded), before it changes
//     anything, and Refusal tells it in advance; one that keeps the
//     writer within its limits, or shrinks what it is over, applies.
//
// Writes without an owner (ACLs off) count for no one, and keys written
// before keys had owners belong to no token until a token writes them.
// A revoked token's keys keep its accessor id and count for no one who
// can write; a token that overwrites one takes it on. The counts are
// derived from the keys, so they need no place in snapshots.

// Errors of the limits in Result.Err.
var (
	// ErrQuotaExceeded: the transaction would take the token that writes
	// it past its max_keys or its max_bytes. The error is a *QuotaError.
	ErrQuotaExceeded = errors.New("fsm: quota exceeded")
	// ErrOwnerNotFound: the transaction's owner is no token the state
	// has (it was revoked, or expired and deleted, after the request was
	// authorized).
	ErrOwnerNotFound = errors.New("fsm: the writing token does not exist")
)

// KeyUsage is what a token owns of the namespace: keys, and their bytes
// of key and value.
type KeyUsage struct {
	Keys  int64 `json:"keys"`
	Bytes int64 `json:"bytes"`
}

// QuotaError wraps ErrQuotaExceeded: the transaction would leave token
// Owner with Would keys (Limit "keys") or bytes (Limit "bytes"), over its
// Max; it owns Used now.
type QuotaError struct {
	Owner            string
	Limit            string
	Max, Used, Would int64
}

func (e *QuotaError) Error() string {
	unit := "keys"
	if e.Limit == "bytes" {
		unit = "bytes of keys and values"
	}
	return fmt.Sprintf("%v: token %s would own %d %s, over its max_%s of %d (it owns %d now)",
		ErrQuotaExceeded, e.Owner, e.Would, unit, e.Limit, e.Max, e.Used)
}

// Unwrap returns ErrQuotaExceeded.
func (e *QuotaError) Unwrap() error { return ErrQuotaExceeded }

// charge counts kv for its owner: in (sign 1) or out (sign -1).
func (k *kvStore) charge(kv *KV, sign int64) {
	if kv.Owner == "" {
		return
	}
	u := k.usage[kv.Owner]
	u.Keys += sign
	u.Bytes += sign * kv.size()
	if u.Keys == 0 {
		delete(k.usage, kv.Owner)
		return
	}
	k.usage[kv.Owner] = u
}

// checkOwner refuses a transaction whose owner is not a token of the
// state.
func (st *state) checkOwner(c Command) error {
	if c.Owner == "" {
		return nil
	}
	if _, ok := st.tokens.byAccessor[c.Owner]; !ok {
		return fmt.Errorf("%w: %q", ErrOwnerNotFound, c.Owner)
	}
	return nil
}

// checkQuota refuses the operations ops of a transaction by owner when
// they would take it past a limit they grow towards.
func (st *state) checkQuota(owner string, ops []TxnOp) error {
	if owner == "" {
		return nil
	}
	tok := st.tokens.byAccessor[owner]
	if tok.MaxKeys == 0 && tok.MaxBytes == 0 {
		return nil
	}
	d := st.kv.delta(owner, ops)
	used := st.kv.usage[owner]
	switch {
	case tok.MaxKeys > 0 && d.Keys > 0 && used.Keys+d.Keys > tok.MaxKeys:
		return &QuotaError{Owner: owner, Limit: "keys", Max: tok.MaxKeys, Used: used.Keys, Would: used.Keys + d.Keys}
	case tok.MaxBytes > 0 && d.Bytes > 0 && used.Bytes+d.Bytes > tok.MaxBytes:
		return &QuotaError{Owner: owner, Limit: "bytes", Max: tok.MaxBytes, Used: used.Bytes, Would: used.Bytes + d.Bytes}
	}
	return nil
}

// delta returns how the operations ops, run in order by owner, would
// change what owner owns, without changing anything: it follows the keys
// they touch in a map of its own (nil for a key deleted), and names
// sequential keys as run does.
func (k *kvStore) delta(owner string, ops []TxnOp) KeyUsage {
	var d KeyUsage
	over := map[string]*KV{}
	cur := func(key []byte) *KV {
		if kv, ok := over[string(key)]; ok {
			return kv
		}
		kv, _ := k.get(key)
		return kv
	}
	count := func(kv *KV, sign int64) {
		if kv != nil && kv.Owner == owner {
			d.Keys += sign
			d.Bytes += sign * kv.size()
		}
	}
	seq := k.seq
	for _, op := range ops {
		switch op.Type {
		case TxnPut:
			key := op.Key
			if op.Sequential {
				for {
					seq++
					if key = fmt.Appendf(bytes.Clone(op.Key), "%0*d", seqDigits, seq); cur(key) == nil {
						break
					}
				}
			}
			count(cur(key), -1)
			kv := &KV{Key: key, Value: op.Value, Owner: owner}
			count(kv, 1)
			over[string(key)] = kv
		case TxnDelete:
			gone := [][]byte{op.Key}
			if len(op.End) > 0 {
				gone = nil
				k.span(op.Key, op.End, 0, func(kv *KV) { gone = append(gone, kv.Key) })
				for key := range over {
					if inRange([]byte(key), op.Key, op.End) {
						gone = append(gone, []byte(key))
					}
				}
			}
			for _, key := range gone {
				if kv := cur(key); kv != nil {
					count(kv, -1)
					over[string(key)] = nil
				}
			}
		}
	}
	return d
}

// KeyUsage returns what the token with accessor id owner owns of the
// namespace.
func (f *FSM) KeyUsage(owner string) KeyUsage {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.kv.usage[owner]
}
