package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lockd/lockd/acl"
)

// limitedToken is a token with a write rule on every key and the limits
// given (0: none).
func limitedToken(accessor string, maxKeys, maxBytes int64) Command {
	tok := token(accessor, "secret-of-"+accessor+"-xxxxxxxx", false, acl.Rule{Kind: acl.Key, Access: acl.Write})
	tok.MaxKeys, tok.MaxBytes = maxKeys, maxBytes
	return Command{Op: OpCreateToken, ACLToken: tok}
}

// by makes c a write of the token owner.
func by(owner string, c Command) Command { c.Owner = owner; return c }

func (h *harness) usage(owner string) string {
	u := h.f.KeyUsage(owner)
	return fmt.Sprintf("%d/%d", u.Keys, u.Bytes)
}

func (h *harness) wantUsage(owner, want string) {
	h.t.Helper()
	if got := h.usage(owner); got != want {
		h.t.Fatalf("entry %d: %s owns %s keys/bytes, want %s", h.idx, owner, got, want)
	}
}

// A token with limits owns the keys it writes, counted in keys and in
// bytes of key and value; a write past either limit is refused whole,
// told in advance, and changes nothing.
func TestQuota_RefusesPastALimitAndAppliesNothing(t *testing.T) {
	h := newHarness(t)
	h.mustApply(limitedToken("t", 2, 20))
	h.mustApply(by("t", puts("a", "12345")))  // 6 bytes
	h.mustApply(by("t", puts("b", "123456"))) // 7 bytes
	h.wantUsage("t", "2/13")
	var qe *QuotaError
	h.mustRefuse(by("t", puts("c", "")), ErrQuotaExceeded)
	if err := h.f.Refusal(by("t", puts("c", ""))); !errors.As(err, &qe) || qe.Limit != "keys" || qe.Max != 2 || qe.Used != 2 || qe.Would != 3 || qe.Owner != "t" {
		t.Fatalf("refusal %v (%+v)", err, qe)
	}
	// Over its own key: only the change of size counts.
	h.mustApply(by("t", puts("a", "123456789012"))) // 13 bytes
	h.wantUsage("t", "2/20")
	h.mustRefuse(by("t", puts("b", "1234567")), ErrQuotaExceeded)
	if err := h.f.Refusal(by("t", puts("b", "1234567"))); !errors.As(err, &qe) || qe.Limit != "bytes" || qe.Would != 21 || qe.Max != 20 {
		t.Fatalf("refusal %v (%+v)", err, qe)
	}
	// A sequential put is a new key too.
	h.mustRefuse(by("t", sequential("q/")), ErrQuotaExceeded)
	// A write that shrinks what the token owns applies, and so does one
	// that stays within both limits.
	h.mustApply(by("t", puts("a", "1")))
	h.wantUsage("t", "2/9")
	// A transaction is refused whole: its first put fits, its second
	// does not; and the failure branch counts when it is the one to run.
	h.mustRefuse(by("t", txn(Txn{Success: []TxnOp{Put([]byte("a"), []byte("x")), Put([]byte("z"), nil)}})), ErrQuotaExceeded)
	h.mustRefuse(by("t", txn(Txn{
		Compare: []Compare{{Key: []byte("a"), Target: TargetExists, Op: Equal, Number: 0}},
		Success: []TxnOp{Delete([]byte("a"))},
		Failure: []TxnOp{Put([]byte("y"), nil)},
	})), ErrQuotaExceeded)
	if kv, _ := h.get("a"); string(kv.Value) != "1" {
		t.Fatalf("a = %+v", kv)
	}
	// Within one transaction, what its earlier operations give back
	// makes room for later ones: a delete then a put, a delete of a
	// prefix then two puts, a put then its delete.
	h.mustApply(by("t", txn(Txn{Success: []TxnOp{Delete([]byte("a")), Put([]byte("c"), []byte("123"))}})))
	h.wantUsage("t", "2/11")
	h.mustApply(by("t", txn(Txn{Success: []TxnOp{prefixOp(TxnDelete, ""), Put([]byte("d"), nil), Put([]byte("e"), []byte("1234567"))}})))
	h.wantUsage("t", "2/9")
	h.mustApply(by("t", txn(Txn{Success: []TxnOp{Put([]byte("f"), nil), Put([]byte("g"), nil), prefixOp(TxnDelete, "f"), Delete([]byte("g")), Delete([]byte("d"))}})))
	h.wantUsage("t", "1/8")
	checkInvariants(t, h.f)
}

// Deletes, deletes of a prefix, and the end of the session of an
// ephemeral key (destroyed, expired, expired in a batch) give the key
// back to the token that owns it, whoever deletes it.
func TestQuota_GivenBackOnDeleteAndSessionEnd(t *testing.T) {
	h := newHarness(t)
	h.mustApply(limitedToken("t", 3, 0))
	h.mustApply(limitedToken("u", 0, 0))
	for _, id := range []string{"s1", "s2", "s3"} {
		h.mustApply(create(id, 0))
	}
	fill := func() {
		h.t.Helper()
		h.mustApply(by("t", puts("k/1", "a", "k/2", "b", "k/3", "c")))
		h.wantUsage("t", "3/12")
		h.mustRefuse(by("t", puts("k/4", "")), ErrQuotaExceeded)
	}
	fill()
	h.mustApply(by("u", dels("k/2"))) // another token's delete
	h.wantUsage("t", "2/8")
	h.mustApply(dels("k/1")) // no token's
	h.wantUsage("t", "1/4")
	h.mustApply(by("u", txn(Txn{Success: []TxnOp{prefixOp(TxnDelete, "k/")}})))
	h.wantUsage("t", "0/0")
	fill()
	h.mustApply(by("u", dels("k/1", "k/2", "k/3")))

	// Ephemeral keys, one per session.
	for i, id := range []string{"s1", "s2", "s3"} {
		h.mustApply(by("t", ephemeral(id, fmt.Sprint("e/", i), "v")))
	}
	h.wantUsage("t", "3/12")
	h.mustRefuse(by("t", puts("x", "")), ErrQuotaExceeded)
	h.mustApply(destroy("s1"))
	h.wantUsage("t", "2/8")
	h.mustApply(expire("s2"))
	h.wantUsage("t", "1/4")
	h.mustApply(expireAll("s3"))
	h.wantUsage("t", "0/0")
	h.mustApply(by("t", puts("x", "", "y", "", "z", "")))
	checkInvariants(t, h.f)
}

// A put over another token's key moves the key, whole, to the writer,
// which must have room for it; the token that had it gets it back. Keys
// of no token (ACLs off, or an older build) count for no one until a
// token writes them. A revoked token's keys keep its id; its writes in
// flight are refused (ErrOwnerNotFound).
func TestQuota_OverwriteMovesTheKey(t *testing.T) {
	h := newHarness(t)
	h.mustApply(limitedToken("t", 0, 10))
	h.mustApply(limitedToken("u", 1, 0))
	h.mustApply(puts("free", "123")) // no owner
	h.wantUsage("", "0/0")
	h.mustApply(by("t", puts("k", "1234")))
	h.wantUsage("t", "1/5")
	h.mustApply(by("u", puts("k", "12")))
	h.wantUsage("t", "0/0")
	h.wantUsage("u", "1/3")
	if kv, _ := h.get("k"); kv.Owner != "u" || kv.Version != 2 {
		t.Fatalf("k = %+v", kv)
	}
	// u is at its one key: taking over "free" is refused, a put over its
	// own key is not.
	h.mustRefuse(by("u", puts("free", "")), ErrQuotaExceeded)
	h.mustApply(by("u", puts("k", "123456")))
	// t takes "free" on: 4+3 bytes... within 10.
	h.mustApply(by("t", puts("free", "123456")))
	h.wantUsage("t", "1/10")
	// and then cannot take k (7 bytes) too.
	h.mustRefuse(by("t", puts("k", "123456")), ErrQuotaExceeded)
	// A write without an owner takes the key from its token.
	h.mustApply(puts("free", "x"))
	h.wantUsage("t", "0/0")

	h.mustApply(Command{Op: OpRevokeToken, ACLToken: &acl.Token{AccessorID: "u"}})
	h.wantUsage("u", "1/7")
	h.mustRefuse(by("u", puts("k", "")), ErrOwnerNotFound)
	h.mustRefuse(by("u", dels("k")), ErrOwnerNotFound)
	h.mustApply(by("t", puts("k", "1")))
	h.wantUsage("u", "0/0")
	h.wantUsage("t", "1/2")
	checkInvariants(t, h.f)
}

// The owners of keys, and so what each token owns, survive a snapshot
// and its restore; a version-6 snapshot (before owners) restores with
// keys of no token, and one that carries owners or limits is refused.
func TestQuota_SnapshotRoundTripAndOlderVersions(t *testing.T) {
	h := newHarness(t)
	h.mustApply(limitedToken("t", 2, 0))
	h.mustApply(create("s", 0))
	h.mustApply(puts("old", "v")) // no owner
	v6 := strings.Replace(string(mustSnapshot(t, h.f)), fmt.Sprintf(`"version":%d`, snapshotVersion), `"version":6`, 1)
	v6 = strings.Replace(v6, `,"max_keys":2`, "", 1)
	h.mustApply(by("t", puts("k", "12")))
	h.mustApply(by("t", ephemeral("s", "e", "1")))
	h.mustApply(by("t", dels("k")))
	h.mustApply(by("t", puts("k", "123")))
	snap := mustSnapshot(t, h.f)
	if !bytes.Contains(snap, []byte(`"owner":"t"`)) || !bytes.Contains(snap, []byte(`"max_keys":2`)) {
		t.Fatalf("snapshot without owners or limits: %s", snap)
	}
	g := mustRestore(t, snap)
	checkInvariants(t, g)
	if again := mustSnapshot(t, g); !bytes.Equal(snap, again) {
		t.Fatalf("round trip differs:\n%s\n%s", snap, again)
	}
	if u := g.KeyUsage("t"); u != (KeyUsage{Keys: 2, Bytes: 6}) {
		t.Fatalf("restored usage %+v", u)
	}
	// The restored state refuses and gives back as the first one does.
	for _, c := range []Command{by("t", puts("x", "")), destroy("s"), by("t", puts("x", ""))} {
		c.Now = h.now
		next := h.idx + 1
		ra, rb := h.apply(c), g.ApplyCommand(next, c)
		if describe(ra) != describe(rb) {
			t.Fatalf("%v: %s, restored %s", c.Op, describe(ra), describe(rb))
		}
	}
	if a, b := mustSnapshot(t, h.f), mustSnapshot(t, g); !bytes.Equal(a, b) {
		t.Fatalf("states differ:\n%s\n%s", a, b)
	}

	old := mustRestore(t, []byte(v6))
	checkInvariants(t, old)
	if kv, ok := old.Get([]byte("old")); !ok || kv.Owner != "" || old.KeyUsage("t") != (KeyUsage{}) {
		t.Fatalf("version 6: %+v %v %+v", kv, ok, old.KeyUsage("t"))
	}
	withOwners := strings.Replace(string(snap), fmt.Sprintf(`"version":%d`, snapshotVersion), `"version":6`, 1)
	withOwners = strings.Replace(withOwners, `,"max_keys":2`, "", 1)
	withLimits := strings.Replace(v6, `"rules":`, `"max_bytes":9,"rules":`, 1)
	for name, data := range map[string]string{"owners": withOwners, "limits": withLimits} {
		if err := New().Restore(strings.NewReader(data)); !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("version 6 with %s: %v", name, err)
		}
	}
}

// The restore of a snapshot refuses owners no token could have had, and
// limits on an admin token.
func TestQuota_RestoreRefusesBadOwnersAndLimits(t *testing.T) {
	h := newHarness(t)
	h.mustApply(limitedToken("t", 2, 0))
	h.mustApply(by("t", puts("k", "1")))
	h.mustApply(Command{Op: OpCreateToken, ACLToken: token("adm", "secret-of-admin-xxxxx", true)})
	h.mustApply(by("t", dels("k")))
	snap := string(mustSnapshot(t, h.f))
	for name, data := range map[string]string{
		"long owner":           strings.Replace(snap, `"owner":"t"`, `"owner":"`+strings.Repeat("t", maxAccessorLen+1)+`"`, 1),
		"owner of a delete":    strings.Replace(snap, `"type":"delete","kv":{"key":"aw==",`, `"type":"delete","kv":{"key":"aw==","owner":"t",`, 1),
		"admin with limits":    strings.Replace(snap, `"admin":true`, `"admin":true,"max_keys":1`, 1),
		"negative limit":       strings.Replace(snap, `"max_keys":2`, `"max_keys":-2`, 1),
		"limit over the bound": strings.Replace(snap, `"max_keys":2`, `"max_keys":9007199254740993`, 1),
	} {
		if data == snap {
			t.Fatalf("%s: the snapshot did not change: %s", name, snap)
		}
		if err := New().Restore(strings.NewReader(data)); !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("%s: %v, want ErrBadSnapshot", name, err)
		}
	}
}

// A create-token entry with limits on an admin token, or negative ones,
// is refused.
func TestQuota_TokensWithBadLimitsRefused(t *testing.T) {
	h := newHarness(t)
	adm := token("a", "secret-of-admin-xxxxx", true)
	adm.MaxBytes = 10
	bad := limitedToken("b", -1, 0)
	for _, c := range []Command{{Op: OpCreateToken, ACLToken: adm}, bad} {
		if res := h.apply(c); !errors.Is(res.Err, ErrBadCommand) {
			t.Errorf("%+v: %v, want ErrBadCommand", c.ACLToken, res.Err)
		}
	}
}
