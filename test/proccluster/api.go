package proccluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/lockd/lockd/api"
)

// defaultHTTPClient is for the harness's own calls to a cluster without
// TLS; every call also carries a context deadline.
var defaultHTTPClient = &http.Client{Timeout: 3 * time.Second}

// Do sends one JSON request to the node and decodes a 2xx answer into out.
func (n *Node) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, n.HTTP+path, body)
	if err != nil {
		return err
	}
	if n.token != "" {
		req.Header.Set("Authorization", "Bearer "+n.token)
	}
	hc := n.hc
	if hc == nil {
		hc = defaultHTTPClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode >= 300 {
		var e api.Error
		if json.Unmarshal(raw, &e) == nil && e.Code != "" {
			return &e
		}
		return fmt.Errorf("cluster: %s %s%s: %s", method, n.HTTP, path, resp.Status)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// Status reads GET /v1/cluster from the node.
func (n *Node) Status(ctx context.Context) (api.Cluster, error) {
	var out api.Cluster
	err := n.Do(ctx, "GET", "/v1/cluster", nil, &out)
	return out, err
}

// SetFault installs a transport fault rule on the node against peer.
// direction is "in", "out" or "both"; rule is "drop" or "blackhole".
func (n *Node) SetFault(ctx context.Context, peer, direction, rule string) error {
	return n.Do(ctx, "POST", "/v1/debug/faults", api.FaultRequest{Peer: peer, Direction: direction, Rule: rule}, nil)
}

// delayRule is the body of a delay rule for /v1/debug/faults.
type delayRule struct {
	Peer      string `json:"peer"`
	Direction string `json:"direction"`
	Rule      string `json:"rule"`
	Delay     string `json:"delay"`
}

// SetDelay installs a delay rule on the node against peer: every byte in
// direction ("in", "out" or "both") between the node and peer is delivered
// d late, in order.
func (n *Node) SetDelay(ctx context.Context, peer, direction string, d time.Duration) error {
	return n.Do(ctx, "POST", "/v1/debug/faults", delayRule{Peer: peer, Direction: direction, Rule: "delay", Delay: d.String()}, nil)
}

// Members reads the cluster's voters from the node's own view.
func (n *Node) Members(ctx context.Context) ([]api.Member, error) {
	st, err := n.Status(ctx)
	return st.Members, err
}

// RemoveMember asks the node (which forwards to the leader) to remove id
// from the cluster.
func (n *Node) RemoveMember(ctx context.Context, id string) error {
	return n.Do(ctx, "DELETE", "/v1/cluster/members/"+id, nil, nil)
}

// AddMember asks the node (which forwards to the leader) to add m as a
// voter.
func (n *Node) AddMember(ctx context.Context, m *Node) error {
	return n.Do(ctx, "POST", "/v1/cluster/members", api.Member{ID: m.ID, Peer: m.Peer, HTTP: m.HTTP}, nil)
}

// AddNonVoter asks the node (which forwards to the leader) to add m as a
// non-voter; a member keeps its role.
func (n *Node) AddNonVoter(ctx context.Context, m *Node) error {
	no := false
	return n.Do(ctx, "POST", "/v1/cluster/members", api.AddMember{Member: api.Member{ID: m.ID, Peer: m.Peer, HTTP: m.HTTP}, Voter: &no}, nil)
}

// HealPeer removes the node's transport fault rules against peer.
func (n *Node) HealPeer(ctx context.Context, peer string) error {
	return n.Do(ctx, "DELETE", "/v1/debug/faults/"+peer, nil, nil)
}

// RefusedDials returns how many of the node's dials to peer a drop rule
// refused since the node started.
func (n *Node) RefusedDials(ctx context.Context, peer string) (uint64, error) {
	var out struct {
		Refused map[string]struct {
			Dials uint64 `json:"dials"`
		} `json:"refused"`
	}
	err := n.Do(ctx, "GET", "/v1/debug/faults", nil, &out)
	return out.Refused[peer].Dials, err
}

// HealFaults removes every transport fault rule on the node.
func (n *Node) HealFaults(ctx context.Context) error {
	return n.Do(ctx, "DELETE", "/v1/debug/faults", nil, nil)
}

// ClockSetting is the body of the debug clock routes. Offset and Rate move
// the node's whole clock (the --unsafe-clock faults); WallStep steps only
// the wall-clock time the node reads, as an NTP step of the system clock
// would, and is absent from nodes that cannot step it.
type ClockSetting struct {
	Offset   string  `json:"offset"`
	Rate     float64 `json:"rate"`
	WallStep *string `json:"wall_step,omitempty"`
}

// Clock reads the node's injectable clock (GET /v1/debug/clock).
func (n *Node) Clock(ctx context.Context) (ClockSetting, error) {
	var out ClockSetting
	err := n.Do(ctx, "GET", "/v1/debug/clock", nil, &out)
	return out, err
}

// SetClock sets the node's clock to real time + offset running at rate.
func (n *Node) SetClock(ctx context.Context, offset time.Duration, rate float64) error {
	return n.Do(ctx, "POST", "/v1/debug/clock", ClockSetting{Offset: offset.String(), Rate: rate}, nil)
}

// SetWallStep steps the node's wall clock to real time + step, leaving its
// monotonic clock (offset and rate) as it is; a step of 0 undoes it.
func (n *Node) SetWallStep(ctx context.Context, step time.Duration) error {
	cur, err := n.Clock(ctx)
	if err != nil {
		return err
	}
	if cur.WallStep == nil {
		return fmt.Errorf("cluster: %s cannot step its wall clock (no wall_step in GET /v1/debug/clock)", n.ID)
	}
	return n.Do(ctx, "POST", "/v1/debug/clock", map[string]string{"wall_step": step.String()}, nil)
}

// CreateToken creates an ACL token (POST /v1/acl/tokens) with the admin
// token of a cluster with Config.ACL, through a leader, and returns it
// with its secret. It tries again while there is no leader or an answer is
// lost (a lost answer may leave an extra token behind), for at most 30 s
// or until ctx ends; a refusal (bad rules, no ACLs) ends it at once.
func (c *Cluster) CreateToken(ctx context.Context, req api.CreateTokenRequest) (api.Token, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		var tok api.Token
		l, err := c.WaitLeader(ctx, 5*time.Second)
		if err == nil {
			err = l.Do(ctx, "POST", "/v1/acl/tokens", req, &tok)
			switch api.CodeOf(err) {
			case "":
				if err == nil {
					return tok, nil
				}
			case api.CodeBadRequest, api.CodeUnauthorized, api.CodeForbidden, api.CodeNotFound, api.CodeTooLarge:
				return api.Token{}, fmt.Errorf("cluster: create token: %w", err)
			}
		}
		select {
		case <-ctx.Done():
			return api.Token{}, fmt.Errorf("cluster: create token: %w (last: %w)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
