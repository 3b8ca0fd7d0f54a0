package compare

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/lockd/lockd/api"
)

// lockdLeads says whether the lockd node at endpoint (a URL or
// host:port) is the Raft leader.
func lockdLeads(ctx context.Context, endpoint string) (bool, error) {
	if !strings.Contains(endpoint, "://") {
		endpoint = "http://" + endpoint
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(endpoint, "/")+"/v1/cluster", nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("%s/v1/cluster: HTTP %d", endpoint, resp.StatusCode)
	}
	var c api.Cluster
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		return false, err
	}
	return strings.EqualFold(c.State, "leader"), nil
}
