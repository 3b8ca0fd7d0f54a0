package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/internal/cli"
)

// infoCmd runs one of the read-only commands: status, locks, sessions,
// elections, leader. The lists are read page by page through to the end.
func infoCmd(name string, args []string) int {
	usage := "lockd " + name + " [--addr ADDRS] [--json]"
	switch name {
	case "leader":
		usage = "lockd leader [--addr ADDRS] [--json] NAME"
	case "sessions":
		usage = "lockd sessions [--addr ADDRS] [--json] [--stale] [ID]\n\n" +
			"Every session, or the one with ID, with its time left and last renewal as the leader sees them\n" +
			"(LEFT and RENEWED are - in a follower's --stale answer: only the leader sees keepalives)."
	}
	fs := cli.NewFlagSet("lockd "+name, usage)
	var f clientFlags
	f.register(fs, true)
	var stale bool
	if name == "sessions" {
		fs.BoolVar(&stale, "stale", false, "let the node asked answer from its own state, leader or not")
	}
	pos, command, err := cli.ParseArgs(fs, args)
	if err != nil {
		return cli.FlagErr(err)
	}
	maxPos := map[string]int{"leader": 1, "sessions": 1}[name]
	if len(command) > 0 || len(pos) > maxPos || (name == "leader" && len(pos) == 0) {
		return cli.UsageErr(fs, "unexpected arguments")
	}
	cons := client.Default
	if stale {
		cons = client.Stale
	}
	c, err := f.client()
	if err != nil {
		return fail(os.Stderr, fs.Name(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var v any
	var table func(io.Writer)
	switch name {
	case "status":
		cl, e := c.Cluster(ctx)
		v, err, table = cl, e, func(w io.Writer) { printCluster(w, cl) }
	case "locks":
		ls, e := c.Locks(ctx)
		var names map[string]string
		if e == nil && !f.jsonOut {
			names = sessionNames(ctx, c)
		}
		v, err, table = ls, e, func(w io.Writer) { printLocks(w, ls, names) }
	case "sessions":
		if len(pos) == 1 {
			s, e := c.SessionInfo(ctx, pos[0], cons)
			v, err, table = s, e, func(w io.Writer) { printSessions(w, []api.Session{s}) }
			break
		}
		ss, e := c.SessionsWith(ctx, cons)
		v, err, table = ss, e, func(w io.Writer) { printSessions(w, ss) }
	case "elections":
		es, e := c.Elections(ctx)
		var names map[string]string
		if e == nil && !f.jsonOut {
			names = sessionNames(ctx, c)
		}
		v, err, table = es, e, func(w io.Writer) { printElections(w, es, names) }
	case "leader":
		l, e := c.Election(ctx, pos[0])
		if errors.Is(e, client.ErrNoElectionLeader) {
			fmt.Fprintf(os.Stderr, "lockd leader: nobody leads %q\n", pos[0])
			return exitNotAcquired
		}
		var names map[string]string
		if e == nil && !f.jsonOut {
			names = sessionNames(ctx, c)
		}
		v, err, table = l, e, func(w io.Writer) {
			fmt.Fprintf(w, "SESSION\tSESSION NAME\tVALUE\tTOKEN\n%s\t%s\t%s\t%d\n", l.Session, dash(names[l.Session]), l.Value, l.Token)
		}
	}
	if err != nil {
		return fail(os.Stderr, fs.Name(), err)
	}
	return output(f.jsonOut, v, table)
}

// output prints v as indented JSON with jsonOut, else the table that table
// writes.
func output(jsonOut bool, v any, table func(io.Writer)) int {
	if jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return fail(os.Stderr, "lockd", fmt.Errorf("write output: %w", err))
		}
		return cli.ExitOK
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	table(tw)
	if err := tw.Flush(); err != nil {
		return fail(os.Stderr, "lockd", fmt.Errorf("write output: %w", err))
	}
	return cli.ExitOK
}

func printCluster(w io.Writer, c api.Cluster) {
	leader, lease := "none", "-"
	if c.Leader != nil {
		leader = c.Leader.ID + " " + c.Leader.HTTP
	}
	if c.MasterLeaseRemaining != nil {
		lease = c.MasterLeaseRemaining.D().Round(time.Millisecond).String()
	}
	fmt.Fprintf(w, "node\t%s (%s, mode %s)\n", c.NodeID, c.State, c.Mode)
	fmt.Fprintf(w, "leader\t%s\n", leader)
	fmt.Fprintf(w, "term\t%d\n", c.Term)
	fmt.Fprintf(w, "commit / applied\t%d / %d\n", c.CommitIndex, c.AppliedIndex)
	fmt.Fprintf(w, "master lease left\t%s\n", lease)
	if e := c.Election; e != nil && e.Role != "" {
		fmt.Fprintf(w, "emergent role\t%s (slaves %s)\n", e.Role, dash(strings.Join(e.Slaves, ",")))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "MEMBER\tPEER\tHTTP\tROLE")
	for _, m := range c.Members {
		role := memberRole(m)
		if c.Mode != "raft" && c.Mode != "" {
			role = "member" // the classic modes have no voters: every member takes part
			if m.Leader {
				role = "leader"
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", m.ID, m.Peer, dash(m.HTTP), role)
	}
}

// sessionNames maps the id of every named session to its name, as the
// sessions list shows them (ids of other tokens' sessions shortened, as
// in the lock list), so that a table can say who holds what. It is nil
// when the list cannot be read: the table then shows ids only.
func sessionNames(ctx context.Context, c *client.Client) map[string]string {
	ss, err := c.Sessions(ctx)
	if err != nil {
		return nil
	}
	names := make(map[string]string, len(ss))
	for _, s := range ss {
		if s.Name != "" {
			names[s.ID] = s.Name
		}
	}
	return names
}

func printLocks(w io.Writer, ls []api.Lock, names map[string]string) {
	fmt.Fprintln(w, "NAME\tMODE\tHOLDERS (session:token name)\tWAITERS\tDELAY UNTIL")
	for _, l := range ls {
		var hs []string
		for _, h := range l.Holders {
			hs = append(hs, holderText(h, names))
		}
		delay := "-"
		if l.DelayUntil != nil {
			delay = l.DelayUntil.Format(time.RFC3339)
		}
		mode := dash(l.Mode)
		if l.Limit > 0 {
			// A semaphore: its limit, and the ends of its delayed slots.
			mode = fmt.Sprintf("semaphore/%d", l.Limit)
			var ends []string
			for _, d := range l.DelayedSlots {
				ends = append(ends, d.Until.Format(time.RFC3339))
			}
			delay = dash(strings.Join(ends, " "))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", l.Name, mode, dash(strings.Join(hs, " ")), len(l.Waiters), delay)
	}
}

// holderText shows a holder as its short session id and token, then its
// session's name when it has one.
func holderText(h api.Holder, names map[string]string) string {
	s := fmt.Sprintf("%s:%d", short(h.Session), h.Token)
	if n := names[h.Session]; n != "" {
		s += " (" + n + ")"
	}
	return s
}

// printSessions shows each session with the time it has left and how long
// ago it was last renewed, as the leader saw them when it answered ("-"
// when the answer has no deadline: a follower's stale read). The renewal
// is told as TTL less the time left, so that it needs no comparison of
// this machine's clock with the leader's.
func printSessions(w io.Writer, ss []api.Session) {
	fmt.Fprintln(w, "ID\tNAME\tTTL\tLEFT\tRENEWED\tLOCK DELAY\tLOCKS\tELECTIONS")
	for _, s := range ss {
		left, renewed := "-", "-"
		if s.TTLRemaining != nil {
			left = s.TTLRemaining.D().Round(100 * time.Millisecond).String()
			renewed = max(s.TTL.D()-s.TTLRemaining.D(), 0).Round(100*time.Millisecond).String() + " ago"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, dash(s.Name), s.TTL, left, renewed, s.LockDelay,
			dash(strings.Join(s.Locks, ",")), dash(strings.Join(s.Elections, ",")))
	}
}

func printElections(w io.Writer, es []api.Election, names map[string]string) {
	fmt.Fprintln(w, "NAME\tSESSION\tSESSION NAME\tVALUE\tTOKEN")
	for _, e := range es {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\n", e.Name, dash(e.Session), dash(names[e.Session]), dash(e.Value), e.Token)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
