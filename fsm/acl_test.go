package fsm

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/acl"
)

func token(accessor, secret string, admin bool, rules ...acl.Rule) *acl.Token {
	return &acl.Token{AccessorID: accessor, Hash: acl.Hash(secret), Admin: admin, Rules: rules}
}

func TestTokens_CreateFindRevoke(t *testing.T) {
	h := newHarness(t)
	w := acl.Rule{Kind: acl.Lock, Prefix: "jobs/", Access: acl.Write}
	res := h.mustApply(Command{Op: OpCreateToken, ACLToken: token("acc-1", "secret-one-secret", false, w)})
	if res.ACLToken == nil || res.ACLToken.CreateIndex != 1 {
		t.Fatalf("create: %+v", res)
	}
	got, ok := h.f.TokenBySecret("secret-one-secret")
	if !ok || got.AccessorID != "acc-1" || len(got.Rules) != 1 || got.Rules[0] != w {
		t.Fatalf("TokenBySecret = %+v, %v", got, ok)
	}
	if _, ok := h.f.TokenBySecret("secret-one-secreT"); ok {
		t.Fatal("a wrong secret found a token")
	}
	// Same accessor, or same secret: refused, nothing changes.
	for _, c := range []*acl.Token{token("acc-1", "another-secret-x", false), token("acc-2", "secret-one-secret", false)} {
		if res := h.apply(Command{Op: OpCreateToken, ACLToken: c}); !errors.Is(res.Err, ErrTokenExists) {
			t.Fatalf("duplicate %+v: %v, want ErrTokenExists", c, res.Err)
		}
	}
	if n := len(h.f.Tokens()); n != 1 {
		t.Fatalf("%d tokens after refusals, want 1", n)
	}
	if res := h.mustApply(Command{Op: OpRevokeToken, ACLToken: &acl.Token{AccessorID: "acc-1"}}); res.ACLToken.AccessorID != "acc-1" {
		t.Fatalf("revoke: %+v", res)
	}
	if _, ok := h.f.TokenBySecret("secret-one-secret"); ok {
		t.Fatal("a revoked token is still found")
	}
	if res := h.apply(Command{Op: OpRevokeToken, ACLToken: &acl.Token{AccessorID: "acc-1"}}); !errors.Is(res.Err, ErrTokenNotFound) {
		t.Fatalf("second revoke: %v", res.Err)
	}
}

func TestTokens_RefusesBadTokens(t *testing.T) {
	h := newHarness(t)
	for name, tok := range map[string]*acl.Token{
		"no token":    nil,
		"no accessor": token("", "secret-one-secret", false),
		"clear text":  {AccessorID: "a", Hash: "secret-one-secret"},
		"bad rule":    token("a", "secret-one-secret", false, acl.Rule{Kind: "queue", Access: acl.Read}),
	} {
		if res := h.apply(Command{Op: OpCreateToken, ACLToken: tok}); !errors.Is(res.Err, ErrBadCommand) {
			t.Errorf("%s: %v, want ErrBadCommand", name, res.Err)
		}
	}
	if res := h.apply(Command{Op: OpBootstrapACL, ACLToken: token("b", "secret-one-secret", false)}); !errors.Is(res.Err, ErrBadCommand) {
		t.Errorf("non-admin bootstrap: %v, want ErrBadCommand", res.Err)
	}
	if len(h.f.Tokens()) != 0 || h.f.ACLBootstrapped() {
		t.Fatal("a refused token was stored")
	}
}

// The bootstrap token is created once in the cluster's life: a second
// bootstrap (another node's flag, a restart) changes nothing, even after
// the first was revoked.
func TestTokens_BootstrapOnce(t *testing.T) {
	h := newHarness(t)
	h.mustApply(Command{Op: OpBootstrapACL, ACLToken: token("boot", "bootstrap-secret-1", true)})
	if !h.f.ACLBootstrapped() {
		t.Fatal("not bootstrapped")
	}
	h.mustApply(Command{Op: OpRevokeToken, ACLToken: &acl.Token{AccessorID: "boot"}})
	if res := h.mustApply(Command{Op: OpBootstrapACL, ACLToken: token("boot2", "bootstrap-secret-2", true)}); res.ACLToken != nil {
		t.Fatalf("second bootstrap stored %+v", res.ACLToken)
	}
	if _, ok := h.f.TokenBySecret("bootstrap-secret-2"); ok || len(h.f.Tokens()) != 0 {
		t.Fatal("a second bootstrap took effect")
	}
}

func TestTokens_SnapshotAndOwner(t *testing.T) {
	h := newHarness(t)
	h.mustApply(Command{Op: OpBootstrapACL, ACLToken: token("boot", "bootstrap-secret-1", true)})
	h.mustApply(Command{Op: OpCreateToken, ACLToken: token("acc-1", "secret-one-secret", false, acl.Rule{Kind: acl.Election, Access: acl.Read})})
	c := create("s1", 0)
	c.Owner = "acc-1"
	h.mustApply(c)
	if s, _ := h.f.Session("s1"); s.Owner != "acc-1" {
		t.Fatalf("session owner %q", s.Owner)
	}
	snap := mustSnapshot(t, h.f)
	if strings.Contains(string(snap), "secret-one-secret") {
		t.Fatal("the snapshot holds a secret in clear")
	}
	g := mustRestore(t, snap)
	if _, ok := g.TokenBySecret("secret-one-secret"); !ok || !g.ACLBootstrapped() || len(g.Tokens()) != 2 {
		t.Fatalf("restored tokens: %+v, bootstrapped %v", g.Tokens(), g.ACLBootstrapped())
	}
	if s, _ := g.Session("s1"); s.Owner != "acc-1" {
		t.Fatalf("restored session owner %q", s.Owner)
	}
	if again := mustSnapshot(t, g); string(again) != string(snap) {
		t.Fatalf("restore and snapshot changed the bytes:\n%s\n%s", snap, again)
	}
	// A version-3 file cannot carry tokens; one that does is refused.
	v3 := strings.Replace(string(snap), fmt.Sprintf(`"version":%d`, snapshotVersion), `"version":3`, 1)
	if err := New().Restore(strings.NewReader(v3)); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("version 3 with tokens: %v", err)
	}
}

// A token's expiry is an absolute time carried in its entry: every replica
// stores the same instant, keeps it through a snapshot, and lists the
// token as expired for any clock at or after it, never before. The FSM
// does not refuse an expired token itself: the leader deletes it with a
// revoke entry.
func TestTokens_ExpiryIsStoredAsGiven(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	mk := func() *acl.Token {
		tok := token("acc-exp", "secret-expiring-1", false, acl.Rule{Kind: acl.Lock, Access: acl.Read})
		v := at
		tok.ExpiresAt = &v
		return tok
	}
	var replicas []*FSM
	for range 2 {
		h := newHarness(t)
		h.mustApply(Command{Op: OpCreateToken, Now: at.Add(-time.Hour), ACLToken: mk()})
		h.mustApply(Command{Op: OpCreateToken, ACLToken: token("acc-forever", "secret-forever-1", false, acl.Rule{Kind: acl.Lock, Access: acl.Read})})
		replicas = append(replicas, h.f, mustRestore(t, mustSnapshot(t, h.f)))
	}
	for i, f := range replicas {
		got, ok := f.TokenBySecret("secret-expiring-1")
		if !ok || got.ExpiresAt == nil || !got.ExpiresAt.Equal(at) {
			t.Fatalf("replica %d: token %+v, want expiry %v", i, got, at)
		}
		if e := f.ExpiredTokens(at.Add(-time.Nanosecond)); len(e) != 0 {
			t.Fatalf("replica %d: expired before its time: %v", i, e)
		}
		for _, now := range []time.Time{at, at.Add(time.Hour)} {
			if e := f.ExpiredTokens(now); len(e) != 1 || e[0] != "acc-exp" {
				t.Fatalf("replica %d at %v: expired %v, want [acc-exp]", i, now, e)
			}
		}
	}
}
