package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// EvidenceFile is the name of the file in a run's directory that holds its
// Evidence, next to the operations in history.jsonl.
const EvidenceFile = "evidence.json"

// SaveEvidence writes ev (without Ops and Dir) to dir/EvidenceFile.
func SaveEvidence(dir string, ev Evidence) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("runner: evidence: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, EvidenceFile), b, 0o600); err != nil {
		return fmt.Errorf("runner: evidence: %w", err)
	}
	return nil
}

// LoadEvidence reads the Evidence a run saved in dir, without its Ops.
// The error wraps fs.ErrNotExist when the run saved none.
func LoadEvidence(dir string) (Evidence, error) {
	var ev Evidence
	b, err := os.ReadFile(filepath.Join(dir, EvidenceFile))
	if err != nil {
		return ev, err
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		return ev, fmt.Errorf("runner: %s: %w", filepath.Join(dir, EvidenceFile), err)
	}
	return ev, nil
}
