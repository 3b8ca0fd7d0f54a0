package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/internal/cli"
)

const membersUsage = `lockd members [--addr ADDRS] [--json]
  lockd members add ID PEER_ADDR --http URL [--non-voter] [--addr ADDRS]
  lockd members remove ID [--addr ADDRS]
Any member forwards add and remove to the leader; with ACLs on they need an admin token.
A new node usually adds itself: start it with --join (docs/operations.md, "Membership").`

// membersTimeout bounds one members or leader-transfer command.
const membersTimeout = 30 * time.Second

// membersCmd runs "lockd members [add|remove]".
func membersCmd(args []string) int {
	fs := cli.NewFlagSet("lockd members", membersUsage)
	var f clientFlags
	f.register(fs, true)
	httpAddr := fs.String("http", "", "add: the new member's HTTP URL (http://host:port or https://...)")
	nonVoter := fs.Bool("non-voter", false, "add: add the node as a non-voter (it replicates the log, never votes; a member keeps its role)")
	verb := "list"
	if len(args) > 0 && (args[0] == "add" || args[0] == "remove" || args[0] == "list") {
		verb, args = args[0], args[1:]
	}
	pos, command, err := cli.ParseArgs(fs, args)
	if err != nil {
		return cli.FlagErr(err)
	}
	want := map[string]int{"list": 0, "add": 2, "remove": 1}[verb]
	if len(command) > 0 || len(pos) != want {
		return cli.UsageErr(fs, "%s takes %d argument(s), got %q", verb, want, pos)
	}
	if (verb == "add") != (*httpAddr != "") {
		return cli.UsageErr(fs, "--http is required with add, and only with add")
	}
	if *nonVoter && verb != "add" {
		return cli.UsageErr(fs, "--non-voter is only for add")
	}
	c, err := f.client()
	if err != nil {
		return fail(os.Stderr, fs.Name(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), membersTimeout)
	defer cancel()
	switch verb {
	case "add":
		m := api.Member{ID: pos[0], Peer: pos[1], HTTP: *httpAddr}
		add, role := c.AddMember, "a voter"
		if *nonVoter {
			add, role = c.AddNonVoter, "a non-voter"
		}
		if err := add(ctx, m); err != nil {
			return fail(os.Stderr, fs.Name()+" add", err)
		}
		fmt.Printf("added %s (peer %s, http %s) as %s, unless it was a member already (a member keeps its role)\n", m.ID, m.Peer, m.HTTP, role)
		return cli.ExitOK
	case "remove":
		if err := c.RemoveMember(ctx, pos[0]); err != nil {
			return fail(os.Stderr, fs.Name()+" remove", err)
		}
		fmt.Printf("removed %s; it stops serving and exits\n", pos[0])
		return cli.ExitOK
	}
	cl, err := leaderView(ctx, c, f)
	if err != nil {
		return fail(os.Stderr, fs.Name(), err)
	}
	return output(f.jsonOut, cl.Members, func(w io.Writer) { printMembers(w, cl) })
}

// leaderView reads GET /v1/cluster, from the leader if the node that
// answers first is not the leader and the leader's address answers: only
// the leader knows when each member last confirmed it follows.
func leaderView(ctx context.Context, c *client.Client, f clientFlags) (api.Cluster, error) {
	cl, err := c.Cluster(ctx)
	if err != nil || cl.Leader == nil || cl.Leader.ID == cl.NodeID || cl.Leader.HTTP == "" {
		return cl, err
	}
	lf := f
	lf.Addr = cl.Leader.HTTP
	lc, err := lf.client()
	if err != nil {
		return cl, nil
	}
	lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if l, err := lc.Cluster(lctx); err == nil && l.NodeID == cl.Leader.ID {
		return l, nil
	}
	return cl, nil
}

func printMembers(w io.Writer, c api.Cluster) {
	fmt.Fprintln(w, "ID\tPEER\tHTTP\tVOTER\tROLE\tLAST CONTACT")
	for _, m := range c.Members {
		role := memberRole(m)
		contact := "-"
		if m.LastContact != nil {
			contact = m.LastContact.D().Round(time.Millisecond).String() + " ago"
		} else if !m.Leader && c.State == "Leader" {
			contact = "never" // the leader has no promise from it
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%v\t%s\t%s\n", m.ID, m.Peer, dash(m.HTTP), m.Voter, role, contact)
	}
}

// memberRole names a member's role: leader, voter (a follower that
// votes) or non-voter.
func memberRole(m api.Member) string {
	switch {
	case m.Leader:
		return "leader"
	case m.Voter:
		return "voter"
	}
	return "non-voter"
}

// transferCmd runs "lockd leader-transfer [--to ID]".
func transferCmd(args []string) int {
	fs := cli.NewFlagSet("lockd leader-transfer", "lockd leader-transfer [--to ID] [--addr ADDRS] [--json]")
	var f clientFlags
	f.register(fs, true)
	to := fs.String("to", "", "the voter to hand leadership to (default: the one the leader finds most up to date)")
	pos, command, err := cli.ParseArgs(fs, args)
	if err != nil {
		return cli.FlagErr(err)
	}
	if len(pos) > 0 || len(command) > 0 {
		return cli.UsageErr(fs, "unexpected arguments")
	}
	c, err := f.client()
	if err != nil {
		return fail(os.Stderr, fs.Name(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), membersTimeout)
	defer cancel()
	res, err := c.TransferLeadership(ctx, *to)
	if err != nil {
		return fail(os.Stderr, fs.Name(), err)
	}
	return output(f.jsonOut, res, func(w io.Writer) {
		leader := "not known yet"
		if res.Leader.ID != "" {
			leader = res.Leader.ID + " " + dash(res.Leader.HTTP)
		}
		fmt.Fprintf(w, "leadership moved from %s; leader now: %s\n", res.From, leader)
	})
}
