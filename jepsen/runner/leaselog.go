package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/lockd/lockd/jepsen/validate"
	"github.com/lockd/lockd/test/proccluster"
)

// readLeaseLogs reads every node's lease log after the run, for the
// master-lease checker. A node that never logged has no file; a file that
// cannot be read is noted on the timeline through note.
func readLeaseLogs(c *proccluster.Cluster, note func(format string, args ...any)) (lines []validate.LeaseLine, skipped int) {
	for _, n := range c.Nodes {
		ls, sk, err := ReadLeaseLog(n.LeaseLogPath)
		if err != nil {
			note("lease log of %s: %v", n.ID, err)
			continue
		}
		lines, skipped = append(lines, ls...), skipped+sk
	}
	return lines, skipped
}

// ReadLeaseLog reads one node's lease log; a missing file has no lines.
func ReadLeaseLog(path string) ([]validate.LeaseLine, int, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = f.Close() }()
	lines, skipped, err := validate.ParseLeaseLog(f)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	return lines, skipped, nil
}
