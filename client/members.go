package client

import (
	"context"
	"net/url"

	"github.com/lockd/lockd/api"
)

// AddMember adds a voter to the cluster, or updates the addresses of a
// member (an admin token's call). Adding a member that is already there
// with the same addresses changes nothing, so the call is repeated after
// an unknown outcome.
func (c *Client) AddMember(ctx context.Context, m api.Member) error {
	return c.call(ctx, "POST", "/v1/cluster/members", api.AddMember{Member: m}, nil, idempotent, 0)
}

// AddNonVoter adds a non-voter to the cluster (an admin token's call): a
// member that replicates the log and serves ?stale reads but never votes
// nor counts toward a commit. A member already in the cluster keeps its
// role. It is repeated after an unknown outcome, as AddMember is.
func (c *Client) AddNonVoter(ctx context.Context, m api.Member) error {
	no := false
	return c.call(ctx, "POST", "/v1/cluster/members", api.AddMember{Member: m, Voter: &no}, nil, idempotent, 0)
}

// RemoveMember removes the member id from the cluster (an admin token's
// call); the leader may remove itself. It is not repeated after an
// unknown outcome: a repeat of a removal that took effect would answer
// not_found.
func (c *Client) RemoveMember(ctx context.Context, id string) error {
	return c.call(ctx, "DELETE", "/v1/cluster/members/"+url.PathEscape(id), nil, nil, unsent, 0)
}

// TransferLeadership asks the leader to hand leadership to the voter to
// ("" lets the leader pick one) and returns once it has stepped down (an
// admin token's call). It is not repeated after an unknown outcome: a
// repeat would move leadership again.
func (c *Client) TransferLeadership(ctx context.Context, to string) (api.TransferResponse, error) {
	var out api.TransferResponse
	err := c.call(ctx, "POST", "/v1/cluster/leader-transfer", api.TransferRequest{To: to}, &out, unsent, 0)
	return out, err
}
