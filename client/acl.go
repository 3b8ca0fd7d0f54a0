package client

import (
	"context"
	"net/url"

	"github.com/lockd/lockd/api"
)

// CreateToken creates an ACL token (an admin token's call) and returns it
// with its secret, which the cluster does not keep: store it now. A create
// whose answer was lost is not retried, since a retry would make a second
// token.
func (c *Client) CreateToken(ctx context.Context, req api.CreateTokenRequest) (api.Token, error) {
	var out api.Token
	err := c.call(ctx, "POST", "/v1/acl/tokens", req, &out, unsent, 0)
	return out, err
}

// Tokens lists the ACL tokens, without their secrets (an admin token's
// call).
func (c *Client) Tokens(ctx context.Context) ([]api.Token, error) {
	var out api.TokenList
	err := c.call(ctx, "GET", "/v1/acl/tokens", nil, &out, idempotent, 0)
	return out.Tokens, err
}

// SelfToken describes the token the client sends.
func (c *Client) SelfToken(ctx context.Context) (api.Token, error) {
	var out api.Token
	err := c.call(ctx, "GET", "/v1/acl/tokens/self", nil, &out, idempotent, 0)
	return out, err
}

// RevokeToken revokes the token with accessor id (an admin token's call).
// It is not retried after an unknown outcome: a repeat of a revocation
// that took effect would answer not_found.
func (c *Client) RevokeToken(ctx context.Context, accessor string) error {
	return c.call(ctx, "DELETE", "/v1/acl/tokens/"+url.PathEscape(accessor), nil, nil, unsent, 0)
}
