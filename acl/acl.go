// Package acl is lockd's access-control model: tokens, the rules they carry,
// and the one decision every request goes through, Allowed. It does no I/O
// and knows nothing of HTTP or Raft: the tokens themselves are replicated
// state (package fsm), the HTTP API asks Allowed before it serves (package
// httpapi).
//
// A token is a secret the client sends as "Authorization: Bearer SECRET".
// The cluster never stores the secret: it stores its SHA-256 (Hash) and
// finds the token by it, then compares the hashes in constant time. Each
// token also has a public AccessorID, which names it in lists, in
// revocation and as the owner of the sessions it creates.
//
// What a token may do:
//
//   - Admin tokens may do everything: cluster membership, tokens, snapshots,
//     the debug routes, and every lock, election and session.
//   - Other tokens carry rules. A rule grants read or write on the locks,
//     the elections or the keys whose names start with its prefix ("" is
//     every name). Write includes read. Read lets a token look at a lock or
//     an election and check a fencing token, or read and watch keys; write
//     lets it acquire, release, campaign, proclaim and resign there, or
//     put and delete keys. A read or delete of a prefix needs the access on
//     that prefix: a rule whose prefix starts it.
//   - A token with rules may carry limits on the keys it owns (MaxKeys,
//     MaxBytes): a key belongs to the token that wrote it last, and a
//     write that would take the token past a limit is refused whole.
//   - Sessions are not named objects: any token with at least one write
//     rule may create sessions, and may keep alive, use and destroy only the
//     sessions it created (Owns). Any token may read the session list, but
//     sees full session ids only for its own sessions.
package acl

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Access is what a rule grants, or what an action needs.
type Access string

// Access levels. Write includes Read.
const (
	Read  Access = "read"
	Write Access = "write"
)

// Kind is the kind of named object a rule covers.
type Kind string

// Object kinds.
const (
	Lock     Kind = "lock"
	Election Kind = "election"
	// Key covers the keys of the namespace: read lets a token read keys
	// and watch them, write lets it put and delete them too.
	Key Kind = "key"
)

// Rule grants Access on the objects of Kind whose names start with Prefix.
type Rule struct {
	Kind   Kind   `json:"kind"`
	Prefix string `json:"prefix"`
	Access Access `json:"access"`
}

// Token is a stored token: everything but the secret.
type Token struct {
	// AccessorID names the token publicly.
	AccessorID string `json:"accessor_id"`
	// Hash is the hex SHA-256 of the secret.
	Hash        string `json:"hash"`
	Description string `json:"description,omitempty"`
	Admin       bool   `json:"admin,omitempty"`
	Rules       []Rule `json:"rules,omitempty"`
	// CreateIndex is the Raft index of the entry that created it.
	CreateIndex uint64 `json:"create_index"`
	// ExpiresAt, if set, is when the token stops being accepted: an
	// absolute wall time, stamped by the leader that created it (its wall
	// clock plus the expiration TTL asked for) into the entry, so that
	// every replica stores the same instant. Each node compares it with its
	// own wall clock when it authorizes a request (the leader for
	// everything but a follower's stale reads), and the leader deletes an
	// expired token with a revoke entry.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// MaxKeys and MaxBytes bound the keys of the namespace the token
	// owns: those it wrote last and that still exist, counted in keys
	// and in bytes of key and value. 0 is no bound. Only a token with
	// rules carries them; the state machine that applies writes enforces
	// them (package fsm).
	MaxKeys  int64 `json:"max_keys,omitempty"`
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// Expired reports whether t has an expiry that is not after now.
func (t Token) Expired(now time.Time) bool {
	return t.ExpiresAt != nil && !now.Before(*t.ExpiresAt)
}

// Action is what a request wants to do: Access on the object of Kind named
// Name, or, with Admin set, an administrative operation (Kind, Name and
// Access are then ignored).
type Action struct {
	Admin  bool
	Kind   Kind
	Name   string
	Access Access
}

// Anything is the action of a request that any valid token may make.
var Anything = Action{}

// Allowed reports whether t may perform a. The zero Action (Anything) is
// allowed to every token.
func Allowed(t Token, a Action) bool {
	switch {
	case t.Admin:
		return true
	case a.Admin:
		return false
	case a == Anything:
		return true
	}
	for _, r := range t.Rules {
		if r.Kind == a.Kind && strings.HasPrefix(a.Name, r.Prefix) && covers(r.Access, a.Access) {
			return true
		}
	}
	return false
}

// CanWriteSomething reports whether t may create sessions: it is an admin
// token or has at least one write rule.
func CanWriteSomething(t Token) bool {
	if t.Admin {
		return true
	}
	for _, r := range t.Rules {
		if r.Access == Write {
			return true
		}
	}
	return false
}

// Owns reports whether t may act on a session whose owner is owner (the
// AccessorID of the token that created it): t created it, or t is an admin
// token. A session created while ACLs were off has no owner, and only
// admin tokens may act on it.
func Owns(t Token, owner string) bool {
	return t.Admin || (owner != "" && subtle.ConstantTimeCompare([]byte(owner), []byte(t.AccessorID)) == 1)
}

func covers(have, want Access) bool {
	return have == Write || have == want
}

// Hash returns the hex SHA-256 of secret, the form in which the cluster
// stores and looks up tokens.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Matches reports whether secret is t's, comparing hashes in constant time.
func Matches(t Token, secret string) bool {
	return subtle.ConstantTimeCompare([]byte(Hash(secret)), []byte(t.Hash)) == 1
}

// Limits on what a token may carry, so that one cannot bloat the state.
const (
	MaxRules       = 64
	MaxDescription = 256
	MaxPrefix      = 256
	// MinSecret is the shortest secret accepted for the bootstrap token
	// (generated secrets are longer).
	MinSecret = 16
	MaxSecret = 256
	// MaxLimit bounds MaxKeys and MaxBytes (2^53, so that JSON carries
	// them exactly to any client).
	MaxLimit = 1 << 53
)

// Validate checks a token's rules and fields (not its hash or accessor,
// which the cluster makes).
func Validate(t Token) error {
	if len(t.Description) > MaxDescription {
		return fmt.Errorf("description of %d bytes, more than %d", len(t.Description), MaxDescription)
	}
	if len(t.Rules) > MaxRules {
		return fmt.Errorf("%d rules, more than %d", len(t.Rules), MaxRules)
	}
	switch {
	case t.MaxKeys < 0 || t.MaxBytes < 0:
		return fmt.Errorf("negative limit (max_keys %d, max_bytes %d): 0 is no limit", t.MaxKeys, t.MaxBytes)
	case t.MaxKeys > MaxLimit || t.MaxBytes > MaxLimit:
		return fmt.Errorf("limit over %d (max_keys %d, max_bytes %d)", int64(MaxLimit), t.MaxKeys, t.MaxBytes)
	case t.Admin && (t.MaxKeys != 0 || t.MaxBytes != 0):
		return errors.New("an admin token has no limits: give limits to a token with rules")
	}
	for i, r := range t.Rules {
		switch {
		case r.Kind != Lock && r.Kind != Election && r.Kind != Key:
			return fmt.Errorf("rule %d: kind %q (want %q, %q or %q)", i, r.Kind, Lock, Election, Key)
		case r.Access != Read && r.Access != Write:
			return fmt.Errorf("rule %d: access %q (want %q or %q)", i, r.Access, Read, Write)
		case len(r.Prefix) > MaxPrefix:
			return fmt.Errorf("rule %d: prefix of %d bytes, more than %d", i, len(r.Prefix), MaxPrefix)
		}
	}
	return nil
}

// ValidateSecret checks a secret given by an operator (the bootstrap token).
func ValidateSecret(s string) error {
	switch {
	case len(s) < MinSecret:
		return fmt.Errorf("secret of %d bytes, fewer than %d", len(s), MinSecret)
	case len(s) > MaxSecret:
		return fmt.Errorf("secret of %d bytes, more than %d", len(s), MaxSecret)
	case strings.ContainsAny(s, " \t\r\n"):
		return fmt.Errorf("secret contains white space")
	}
	return nil
}

// ParseRule parses "KIND:PREFIX:ACCESS", as the CLI takes rules (for
// example "lock:jobs/:write"; the prefix may be empty: "election::read").
func ParseRule(s string) (Rule, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return Rule{}, fmt.Errorf("rule %q: want KIND:PREFIX:ACCESS, e.g. lock:jobs/:write", s)
	}
	r := Rule{Kind: Kind(parts[0]), Prefix: parts[1], Access: Access(parts[2])}
	if err := Validate(Token{Rules: []Rule{r}}); err != nil {
		return Rule{}, fmt.Errorf("rule %q: %w", s, err)
	}
	return r, nil
}

// String formats r as ParseRule reads it.
func (r Rule) String() string {
	return string(r.Kind) + ":" + r.Prefix + ":" + string(r.Access)
}
