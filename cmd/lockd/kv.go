package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/internal/cli"
)

const kvUsage = `lockd kv get|put|del|ls|watch|txn ...

  lockd kv get KEY                  print the key's value as stored, byte for byte (--json: the record)
  lockd kv put KEY VALUE|-          write VALUE, or standard input with -; print key= index= version=
  lockd kv del KEY | --prefix P     delete a key, or every key under P; print deleted=N index=
  lockd kv ls [PREFIX]              the keys under PREFIX (--keys: names only, --count: how many)
  lockd kv watch KEY | --prefix P   a line per change from now (or after --index), until interrupted
  lockd kv txn [FILE|-]             apply a transaction (JSON, as POST /v1/txn takes it); print the answer

Exit codes: 0 ok, 1 error, 2 usage, 3 the key does not exist (get), a --cas that
did not hold, a transaction whose compares did not hold (its failure branch
ran), or a --guard or a transaction's guard refused (the lock has moved on, or
is not held with that token). Run "lockd kv COMMAND -h" for a command's flags.`

// kvTimeout bounds one command of lockd kv other than watch; a write is
// repeated within it while no leader answers.
const kvTimeout = 30 * time.Second

// kvCmd runs "lockd kv SUB ...", reading a value from stdin for put -.
func kvCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: "+kvUsage)
		return cli.ExitUsage
	}
	switch args[0] {
	case "get":
		return kvGet(ctx, args[1:], stdout, stderr)
	case "put":
		return kvPut(ctx, args[1:], stdin, stdout, stderr)
	case "del", "delete", "rm":
		return kvDel(ctx, args[1:], stdout, stderr)
	case "ls", "list":
		return kvList(ctx, args[1:], stdout, stderr)
	case "watch":
		return kvWatch(ctx, args[1:], stdout, stderr)
	case "txn":
		return kvTxn(ctx, args[1:], stdin, stdout, stderr)
	case "-h", "--help", "-help", "help":
		fmt.Fprintln(stderr, "usage: "+kvUsage)
		return cli.ExitOK
	}
	fmt.Fprintf(stderr, "lockd kv: unknown command %q\n\nusage: %s\n", args[0], kvUsage)
	return cli.ExitUsage
}

// kvFlagSet is a flag set of a lockd kv command with the client flags.
func kvFlagSet(name, usage string, stderr io.Writer) (*flag.FlagSet, *clientFlags) {
	fs := cli.NewFlagSet("lockd kv "+name, usage)
	fs.SetOutput(stderr)
	f := &clientFlags{}
	f.register(fs, true)
	return fs, f
}

// consistencyFlags are --stale and --consistent of the reads.
type consistencyFlags struct{ stale, consistent bool }

func (c *consistencyFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.stale, "stale", false, "let the node asked answer from its own state, leader or not")
	fs.BoolVar(&c.consistent, "consistent", false, "have the leader confirm a quorum before it answers")
}

func (c consistencyFlags) get() (client.Consistency, error) {
	switch {
	case c.stale && c.consistent:
		return "", errors.New("--stale and --consistent cannot be used together")
	case c.stale:
		return client.Stale, nil
	case c.consistent:
		return client.Consistent, nil
	}
	return client.Default, nil
}

// casFlag is --cas N: the modify index a write expects (0: the key must
// not exist), unset by default.
type casFlag struct {
	n   uint64
	set bool
}

func (c *casFlag) String() string {
	if !c.set {
		return ""
	}
	return strconv.FormatUint(c.n, 10)
}

func (c *casFlag) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return errors.New("want the key's modify index, a number (0 with put: only if the key does not exist)")
	}
	*c = casFlag{n: n, set: true}
	return nil
}

// guardFlag is --guard LOCK:TOKEN: a fenced write.
type guardFlag struct {
	lock  string
	token uint64
}

func (g *guardFlag) String() string {
	if g.lock == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d", g.lock, g.token)
}

func (g *guardFlag) Set(s string) error {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return errors.New(`want LOCK:TOKEN, e.g. "$LOCKD_LOCK:$LOCKD_TOKEN" under lockd lock`)
	}
	t, err := strconv.ParseUint(s[i+1:], 10, 64)
	if err != nil || t == 0 {
		return fmt.Errorf("token %q: want the fencing token, a positive number", s[i+1:])
	}
	if err := api.ValidateName(s[:i]); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	*g = guardFlag{lock: s[:i], token: t}
	return nil
}

// writeOptions are the options of a write that --cas and --guard give.
func writeOptions(cas casFlag, guard guardFlag) []client.WriteOption {
	var opts []client.WriteOption
	if cas.set {
		opts = append(opts, client.WithCAS(cas.n))
	}
	if guard.lock != "" {
		opts = append(opts, client.WithGuard(guard.lock, guard.token))
	}
	return opts
}

// kvFail reports err and returns its exit code: exitNotAcquired for a
// refusal the command's flags asked for (a missing key, a cas that did
// not hold, a guard refused), else cli.ExitError.
func kvFail(stderr io.Writer, cmd string, err error) int {
	switch {
	case errors.Is(err, client.ErrKeyNotFound), errors.Is(err, client.ErrCASFailed),
		errors.Is(err, client.ErrStaleToken), errors.Is(err, client.ErrNotHolder):
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return exitNotAcquired
	}
	return fail(stderr, cmd, err)
}

// printJSON writes v as one line of JSON.
func printJSON(w io.Writer, cmd string, stderr io.Writer, v any) int {
	b, err := json.Marshal(v)
	if err == nil {
		_, err = fmt.Fprintf(w, "%s\n", b)
	}
	return writeErr(stderr, cmd, err)
}

func kvGet(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, f := kvFlagSet("get", "lockd kv get [flags] KEY\n\n"+
		"Print the value of KEY as it is stored, byte for byte, with nothing added (so that\n"+
		"lockd kv get K > file and lockd kv put K - < file round-trip); --json prints the\n"+
		"record (value in base64) and the index of the read. Exit 3 if KEY does not exist.", stderr)
	var cons consistencyFlags
	cons.register(fs)
	pos, command, err := cli.ParseArgs(fs, args)
	if err != nil {
		return cli.FlagErr(err)
	}
	if len(pos) != 1 || len(command) > 0 {
		return cli.UsageErr(fs, "want one KEY")
	}
	if err := api.ValidateKey(pos[0]); err != nil {
		return cli.UsageErr(fs, "%v", err)
	}
	c, code := kvClient(fs, f, stderr)
	if c == nil {
		return code
	}
	cn, err := cons.get()
	if err != nil {
		return cli.UsageErr(fs, "%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, kvTimeout)
	defer cancel()
	r, err := c.KV().Get(ctx, pos[0], cn)
	if err != nil {
		return kvFail(stderr, fs.Name(), err)
	}
	if f.jsonOut {
		return printJSON(stdout, fs.Name(), stderr, r)
	}
	_, err = stdout.Write(r.KV.Value)
	return writeErr(stderr, fs.Name(), err)
}

func kvClient(fs *flag.FlagSet, f *clientFlags, stderr io.Writer) (*client.Client, int) {
	c, err := f.client()
	if err != nil {
		return nil, fail(stderr, fs.Name(), err)
	}
	return c, 0
}

func kvPut(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, f := kvFlagSet("put", "lockd kv put [flags] KEY VALUE|-\n\n"+
		"Write VALUE to KEY (- reads the value from standard input; a VALUE that starts with\n"+
		"a dash goes after --) and print key=KEY index=N version=V, or with --json the answer.\n"+
		"--ephemeral makes the key owned by a session that lives beyond this command:\n"+
		"--session ID, or LOCKD_SESSION, which lockd lock and lockd elect give the command\n"+
		"they run; the key is deleted when that session ends. Exit 3 if --cas or --guard\n"+
		"did not hold.", stderr)
	var cas casFlag
	var guard guardFlag
	var flags uint64
	var session string
	var ephemeral, sequential bool
	fs.Var(&cas, "cas", "write only if the key's modify index is `N` (0: only if the key does not exist)")
	fs.Var(&guard, "guard", "write only while the lock LOCK is held with the fencing token TOKEN (`LOCK:TOKEN`)")
	fs.Uint64Var(&flags, "flags", 0, "the key's flags, a number for the client's own use")
	fs.BoolVar(&ephemeral, "ephemeral", false, "owned by the session of --session: deleted when it ends")
	fs.StringVar(&session, "session", "", "the `ID` of the session an --ephemeral key belongs to (env LOCKD_SESSION)")
	fs.BoolVar(&sequential, "sequential", false, "KEY is a prefix: write a new key, KEY followed by a 20-digit number that never repeats")
	pos, command, err := cli.ParseArgs(fs, args)
	if err != nil {
		return cli.FlagErr(err)
	}
	if len(pos) == 1 && len(command) == 1 {
		pos = append(pos, command[0])
		command = nil
	}
	if len(pos) != 2 || len(command) > 0 {
		return cli.UsageErr(fs, "want KEY and VALUE (or - to read the value from standard input)")
	}
	key, value := pos[0], []byte(pos[1])
	switch {
	case ephemeral && session == "":
		return cli.UsageErr(fs, "--ephemeral needs --session ID (or LOCKD_SESSION): a session of this command would end, and delete the key, as it exits")
	case !ephemeral && session != "" && flagGiven(fs, "session"):
		return cli.UsageErr(fs, "--session names the session of an --ephemeral key")
	case sequential && cas.set:
		return cli.UsageErr(fs, "--cas and --sequential cannot be used together: a sequential put always creates a new key")
	}
	if err := (&api.KVPutRequest{Sequential: sequential}).Validate(key); err != nil {
		return cli.UsageErr(fs, "%v", err)
	}
	if pos[1] == "-" {
		value, err = io.ReadAll(io.LimitReader(stdin, api.MaxKVValueLen+1))
		if err != nil {
			return fail(stderr, fs.Name(), fmt.Errorf("read standard input: %w", err))
		}
	}
	if len(value) > api.MaxKVValueLen {
		return cli.UsageErr(fs, "the value is over %d bytes, the limit", api.MaxKVValueLen)
	}
	c, code := kvClient(fs, f, stderr)
	if c == nil {
		return code
	}
	kv := c.KV()
	opts := writeOptions(cas, guard)
	if flags != 0 {
		opts = append(opts, client.WithFlags(flags))
	}
	if sequential {
		opts = append(opts, client.Sequential())
	}
	if ephemeral {
		kv = c.SessionKV(session)
		opts = append(opts, client.Ephemeral())
	}
	ctx, cancel := context.WithTimeout(ctx, kvTimeout)
	defer cancel()
	r, err := kv.Put(ctx, key, value, opts...)
	if err != nil {
		return kvFail(stderr, fs.Name(), err)
	}
	if f.jsonOut {
		return printJSON(stdout, fs.Name(), stderr, r)
	}
	_, err = fmt.Fprintf(stdout, "key=%s index=%d version=%d\n", r.KV.Key, r.Index, r.KV.Version)
	return writeErr(stderr, fs.Name(), err)
}

// keyOrPrefix returns what a command given one KEY or --prefix PREFIX
// acts on, checked, and whether it is a prefix; code is a usage error's
// exit code, or -1.
func keyOrPrefix(fs *flag.FlagSet, pos, command []string, prefix string) (key string, isPrefix bool, code int) {
	isPrefix = flagGiven(fs, "prefix")
	if len(command) > 0 || isPrefix && len(pos) > 0 || !isPrefix && len(pos) != 1 {
		return "", false, cli.UsageErr(fs, "want one KEY, or --prefix PREFIX")
	}
	if isPrefix {
		if err := api.ValidatePrefix(prefix); err != nil {
			return "", false, cli.UsageErr(fs, "%v", err)
		}
		return prefix, true, -1
	}
	if err := api.ValidateKey(pos[0]); err != nil {
		return "", false, cli.UsageErr(fs, "%v", err)
	}
	return pos[0], false, -1
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

func kvDel(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, f := kvFlagSet("del", "lockd kv del [flags] KEY\n       lockd kv del [flags] --prefix PREFIX\n\n"+
		"Delete KEY, or every key that starts with PREFIX (not empty), and print deleted=N\n"+
		"index=I (or with --json the answer). A key that does not exist deletes nothing and\n"+
		"is no error; exit 3 if --cas or --guard did not hold.", stderr)
	var cas casFlag
	var guard guardFlag
	var prefix string
	fs.Var(&cas, "cas", "delete only if the key's modify index is `N`")
	fs.Var(&guard, "guard", "delete only while the lock LOCK is held with the fencing token TOKEN (`LOCK:TOKEN`)")
	fs.StringVar(&prefix, "prefix", "", "delete every key that starts with `PREFIX`")
	pos, command, err := cli.ParseArgs(fs, args)
	if err != nil {
		return cli.FlagErr(err)
	}
	key, isPrefix, code := keyOrPrefix(fs, pos, command, prefix)
	switch {
	case code >= 0:
		return code
	case isPrefix && prefix == "":
		return cli.UsageErr(fs, "--prefix is empty: lockd kv del does not delete every key")
	case isPrefix && cas.set:
		return cli.UsageErr(fs, "--cas applies to one key, not to a prefix")
	case cas.set && cas.n == 0:
		return cli.UsageErr(fs, "--cas 0 would delete the key only if it does not exist: give the modify index of the key")
	}
	c, code := kvClient(fs, f, stderr)
	if c == nil {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, kvTimeout)
	defer cancel()
	var r api.KVDeleteResponse
	if isPrefix {
		r, err = c.KV().DeletePrefix(ctx, key, writeOptions(cas, guard)...)
	} else {
		r, err = c.KV().Delete(ctx, key, writeOptions(cas, guard)...)
	}
	if err != nil {
		return kvFail(stderr, fs.Name(), err)
	}
	if f.jsonOut {
		return printJSON(stdout, fs.Name(), stderr, r)
	}
	_, err = fmt.Fprintf(stdout, "deleted=%d index=%d\n", r.Deleted, r.Index)
	return writeErr(stderr, fs.Name(), err)
}

func kvList(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, f := kvFlagSet("ls", "lockd kv ls [flags] [PREFIX]\n\n"+
		"List the keys that start with PREFIX (every key without one), in key order, read\n"+
		"page by page to the end: a table of KEY, VERSION, MODIFY INDEX, FLAGS, SESSION and\n"+
		"the value's BYTES; --keys prints the keys alone, one a line; --count the number of\n"+
		"keys; --json the records (values in base64, none with --keys) and the index of the\n"+
		"first page's read, from which lockd kv watch --index misses no change.", stderr)
	var cons consistencyFlags
	cons.register(fs)
	var keys, count bool
	fs.BoolVar(&keys, "keys", false, "print the keys only")
	fs.BoolVar(&count, "count", false, "print how many keys there are")
	pos, command, err := cli.ParseArgs(fs, args)
	if err != nil {
		return cli.FlagErr(err)
	}
	if len(pos) > 1 || len(command) > 0 {
		return cli.UsageErr(fs, "want at most one PREFIX")
	}
	prefix := ""
	if len(pos) == 1 {
		prefix = pos[0]
	}
	if err := api.ValidatePrefix(prefix); err != nil {
		return cli.UsageErr(fs, "%v", err)
	}
	if keys && count {
		return cli.UsageErr(fs, "--keys and --count cannot be used together")
	}
	cn, err := cons.get()
	if err != nil {
		return cli.UsageErr(fs, "%v", err)
	}
	c, code := kvClient(fs, f, stderr)
	if c == nil {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, kvTimeout)
	defer cancel()
	opt := client.ListOptions{Consistency: cn, KeysOnly: keys}
	if count {
		n, index, err := c.KV().Count(ctx, prefix, opt)
		if err != nil {
			return fail(stderr, fs.Name(), err)
		}
		if f.jsonOut {
			return printJSON(stdout, fs.Name(), stderr, map[string]uint64{"count": uint64(n), "index": index}) //nolint:gosec // G115: a count is not negative
		}
		_, err = fmt.Fprintln(stdout, n)
		return writeErr(stderr, fs.Name(), err)
	}
	l, err := c.KV().List(ctx, prefix, opt)
	if err != nil {
		return fail(stderr, fs.Name(), err)
	}
	if f.jsonOut {
		return printJSON(stdout, fs.Name(), stderr, l)
	}
	if keys {
		var b strings.Builder
		for _, kv := range l.KVs {
			b.WriteString(kv.Key + "\n")
		}
		_, err = io.WriteString(stdout, b.String())
		return writeErr(stderr, fs.Name(), err)
	}
	return tableTo(stdout, stderr, func(w io.Writer) {
		fmt.Fprintln(w, "KEY\tVERSION\tMODIFY INDEX\tFLAGS\tSESSION\tBYTES")
		for _, kv := range l.KVs {
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t%d\n", kv.Key, kv.Version, kv.ModifyIndex, kv.Flags, dash(kv.Session), len(kv.Value))
		}
	})
}

func writeErr(stderr io.Writer, cmd string, err error) int {
	if err != nil {
		return fail(stderr, cmd, fmt.Errorf("write output: %w", err))
	}
	return cli.ExitOK
}

func kvWatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, f := kvFlagSet("watch", "lockd kv watch [flags] KEY\n       lockd kv watch [flags] --prefix PREFIX\n\n"+
		"Print a line per change of KEY, or of the keys that start with PREFIX (\"\" for every\n"+
		"key), from now or after the index --index, until interrupted (SIGINT, SIGTERM,\n"+
		"SIGHUP: exit 0):\n"+
		"  index=N put KEY version=V value=\"...\"   (the value quoted as Go does, cut at 64 bytes)\n"+
		"  index=N delete KEY\n"+
		"--json prints each event as one JSON object a line, as the API answers it. A change\n"+
		"of leader is ridden out. A watch that falls behind the history the cluster keeps\n"+
		"ends with exit 1, naming the oldest index: read again, and watch with --index.", stderr)
	var prefix string
	var index uint64
	var keys bool
	fs.StringVar(&prefix, "prefix", "", "watch every key that starts with `PREFIX`")
	fs.Uint64Var(&index, "index", 0, "print the changes after this `index` (default: from now)")
	fs.BoolVar(&keys, "keys", false, "leave the values out")
	pos, command, err := cli.ParseArgs(fs, args)
	if err != nil {
		return cli.FlagErr(err)
	}
	key, isPrefix, code := keyOrPrefix(fs, pos, command, prefix)
	if code >= 0 {
		return code
	}
	c, code := kvClient(fs, f, stderr)
	if c == nil {
		return code
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	kv := c.KV()
	if !flagGiven(fs, "index") {
		rctx, cancel := context.WithTimeout(ctx, kvTimeout)
		if isPrefix {
			_, index, err = kv.Count(rctx, prefix, client.ListOptions{})
		} else {
			var r api.KVRead
			r, err = kv.Get(rctx, key, client.Default)
			index = r.Index
			if errors.Is(err, client.ErrKeyNotFound) {
				err = nil
			}
		}
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return cli.ExitOK
			}
			return fail(stderr, fs.Name(), err)
		}
	}
	opts := []client.WatchOption{}
	if isPrefix {
		opts = append(opts, client.WatchPrefix())
	}
	if keys {
		opts = append(opts, client.WatchKeysOnly())
	}
	for ev := range kv.Watch(ctx, key, index, opts...) {
		if ev.Err != nil {
			return fail(stderr, fs.Name(), ev.Err)
		}
		var code int
		if f.jsonOut {
			code = printJSON(stdout, fs.Name(), stderr, ev.Event)
		} else {
			_, err := fmt.Fprintln(stdout, eventLine(ev.Event))
			code = writeErr(stderr, fs.Name(), err)
		}
		if code != cli.ExitOK {
			return code
		}
	}
	return cli.ExitOK
}

// eventLine shows one event of a watch.
func eventLine(e api.Event) string {
	if e.Type != "put" {
		return fmt.Sprintf("index=%d %s %s", e.Index, e.Type, e.KV.Key)
	}
	v, cut := e.KV.Value, ""
	if len(v) > 64 {
		v, cut = v[:64], "..."
	}
	return fmt.Sprintf("index=%d put %s version=%d value=%q%s", e.Index, e.KV.Key, e.KV.Version, v, cut)
}

// tableTo writes a table through a tabwriter to w.
func tableTo(w, stderr io.Writer, table func(io.Writer)) int {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	table(tw)
	if err := tw.Flush(); err != nil {
		return fail(stderr, "lockd", fmt.Errorf("write output: %w", err))
	}
	return cli.ExitOK
}

func kvTxn(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, f := kvFlagSet("txn", "lockd kv txn [flags] [FILE|-]\n\n"+
		"Apply a transaction in one Raft entry: a JSON object as POST /v1/txn takes it\n"+
		"(compare, success, failure, guard; values in base64; docs/api.md), read from FILE or,\n"+
		"with - or no FILE, from standard input. Print the answer as one line of JSON\n"+
		"(succeeded, the results of the branch that ran, index). Its ephemeral puts belong to\n"+
		"--session ID (or LOCKD_SESSION). Exit 3 if the compares did not hold (the failure\n"+
		"branch ran) or the guard was refused.", stderr)
	var session string
	fs.StringVar(&session, "session", "", "the `ID` of the session the transaction's ephemeral puts belong to (env LOCKD_SESSION)")
	pos, command, err := cli.ParseArgs(fs, args)
	if err != nil {
		return cli.FlagErr(err)
	}
	if len(pos) > 1 || len(command) > 0 {
		return cli.UsageErr(fs, "want at most one FILE")
	}
	in := stdin
	if len(pos) == 1 && pos[0] != "-" {
		file, err := os.Open(pos[0])
		if err != nil {
			return cli.UsageErr(fs, "%v", err)
		}
		defer func() { _ = file.Close() }()
		in = file
	}
	var req api.TxnRequest
	dec := json.NewDecoder(io.LimitReader(in, api.MaxTxnBody+1))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return cli.UsageErr(fs, "the transaction is not valid JSON of POST /v1/txn: %v", err)
	}
	if req.Session != "" || req.Seq != 0 {
		return cli.UsageErr(fs, "session and seq are the client library's; leave them out")
	}
	if err := req.Validate(); err != nil {
		return cli.UsageErr(fs, "%v", err)
	}
	c, code := kvClient(fs, f, stderr)
	if c == nil {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, kvTimeout)
	defer cancel()
	kv := c.KV()
	if session != "" {
		kv = c.SessionKV(session)
	}
	r, err := kv.DoTxn(ctx, req)
	if err != nil {
		return kvFail(stderr, fs.Name(), err)
	}
	if code := printJSON(stdout, fs.Name(), stderr, r); code != cli.ExitOK {
		return code
	}
	if !r.Succeeded {
		return exitNotAcquired
	}
	return cli.ExitOK
}
