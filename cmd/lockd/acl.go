package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/internal/cli"
)

const aclUsage = `lockd acl token create [--description TEXT] [--expiration-ttl DURATION] (--admin | --rule KIND:PREFIX:ACCESS ... [--max-keys N] [--max-bytes N]) [--addr ADDRS] [--json]
  lockd acl token list | self [--addr ADDRS] [--json]
  lockd acl token revoke ACCESSOR_ID [--addr ADDRS]
The token sent is LOCKD_ACL_TOKEN (or --acl-token); create, list and revoke need an admin token.
A rule: KIND lock, election or key, a name PREFIX (may be empty), ACCESS read or write, e.g. lock:jobs/:write or key:config/:read.
--max-keys and --max-bytes bound the keys the token owns (those it wrote last and that exist), in keys
and in bytes of key and value; a write past either is refused (quota_exceeded). list and self show them
and what the token owns.`

// rulesFlag collects repeated --rule flags.
type rulesFlag []acl.Rule

func (r *rulesFlag) String() string { return fmt.Sprint(*r) }

func (r *rulesFlag) Set(s string) error {
	rule, err := acl.ParseRule(s)
	if err != nil {
		return err
	}
	*r = append(*r, rule)
	return nil
}

// aclCmd runs "lockd acl token ...".
func aclCmd(args []string) int {
	fs := cli.NewFlagSet("lockd acl token", aclUsage)
	var f clientFlags
	f.register(fs, true)
	var rules rulesFlag
	desc := fs.String("description", "", "create: what the token is for")
	admin := fs.Bool("admin", false, "create: an admin token (everything, including tokens and membership)")
	fs.Var(&rules, "rule", "create: a rule KIND:PREFIX:ACCESS; repeat for more")
	expiry := fs.Duration("expiration-ttl", 0, "create: the token expires this long after its creation (1s to 87600h; default: never)")
	maxKeys := fs.Int64("max-keys", 0, "create: the most keys the token may own (0: no limit)")
	maxBytes := fs.Int64("max-bytes", 0, "create: the most bytes of keys and values the token may own (0: no limit)")
	if len(args) < 2 || args[0] != "token" {
		return cli.UsageErr(fs, "want: lockd acl token create|list|self|revoke")
	}
	verb := args[1]
	pos, command, err := cli.ParseArgs(fs, args[2:])
	if err != nil {
		return cli.FlagErr(err)
	}
	if len(command) > 0 || (verb == "revoke") != (len(pos) == 1) || (verb != "revoke" && len(pos) > 0) {
		return cli.UsageErr(fs, "unexpected arguments")
	}
	if verb != "create" && (*admin || len(rules) > 0 || *desc != "" || *expiry != 0 || *maxKeys != 0 || *maxBytes != 0) {
		return cli.UsageErr(fs, "--admin, --rule, --description, --expiration-ttl, --max-keys and --max-bytes are for create")
	}
	c, err := f.client()
	if err != nil {
		return fail(os.Stderr, fs.Name(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var v any
	var table func(io.Writer)
	switch verb {
	case "create":
		if *admin == (len(rules) > 0) {
			return cli.UsageErr(fs, "give --admin or at least one --rule, not both")
		}
		if *admin && (*maxKeys != 0 || *maxBytes != 0) {
			return cli.UsageErr(fs, "an admin token has no limits: --max-keys and --max-bytes are for a token with rules")
		}
		if *maxKeys < 0 || *maxBytes < 0 {
			return cli.UsageErr(fs, "--max-keys and --max-bytes are 0 (no limit) or more")
		}
		tok, e := c.CreateToken(ctx, api.CreateTokenRequest{Description: *desc, Admin: *admin, Rules: rules,
			ExpirationTTL: api.Duration(*expiry), MaxKeys: *maxKeys, MaxBytes: *maxBytes})
		v, err, table = tok, e, func(w io.Writer) {
			fmt.Fprintf(w, "ACCESSOR\tSECRET\tEXPIRES\tLIMITS\n%s\t%s\t%s\t%s\n", tok.AccessorID, tok.Secret, expires(tok), limits(tok))
			fmt.Fprintln(os.Stderr, "lockd acl token create: the secret is shown once; the cluster keeps only its hash")
		}
	case "list":
		toks, e := c.Tokens(ctx)
		v, err, table = toks, e, func(w io.Writer) { printTokens(w, toks) }
	case "self":
		tok, e := c.SelfToken(ctx)
		v, err, table = tok, e, func(w io.Writer) { printTokens(w, []api.Token{tok}) }
	case "revoke":
		err = c.RevokeToken(ctx, pos[0])
		v, table = struct{}{}, func(io.Writer) {}
	default:
		return cli.UsageErr(fs, "unknown verb %q (want create, list, self or revoke)", verb)
	}
	if err != nil {
		return fail(os.Stderr, fs.Name()+" "+verb, err)
	}
	return output(f.jsonOut, v, table)
}

func printTokens(w io.Writer, toks []api.Token) {
	fmt.Fprintln(w, "ACCESSOR\tADMIN\tRULES\tEXPIRES\tLIMITS\tOWNS\tDESCRIPTION")
	for _, t := range toks {
		rules := make([]string, len(t.Rules))
		for i, r := range t.Rules {
			rules[i] = r.String()
		}
		owns := "-"
		if u := t.Usage; u != nil {
			owns = fmt.Sprintf("keys=%d,bytes=%d", u.Keys, u.Bytes)
		}
		fmt.Fprintf(w, "%s\t%v\t%s\t%s\t%s\t%s\t%s\n", t.AccessorID, t.Admin, strings.Join(rules, ","), expires(t), limits(t), owns, t.Description)
	}
}

// limits shows a token's limits on keys, or "none".
func limits(t api.Token) string {
	var out []string
	if t.MaxKeys > 0 {
		out = append(out, fmt.Sprintf("max_keys=%d", t.MaxKeys))
	}
	if t.MaxBytes > 0 {
		out = append(out, fmt.Sprintf("max_bytes=%d", t.MaxBytes))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ",")
}

// expires shows when a token expires (the leader's wall time, in UTC), or
// "never".
func expires(t api.Token) string {
	if t.ExpirationTime == nil {
		return "never"
	}
	return t.ExpirationTime.UTC().Format(time.RFC3339)
}
