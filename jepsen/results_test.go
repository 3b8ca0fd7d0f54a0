package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAddResultsRow_GoesIntoTheFirstTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "RESULTS.md")
	in := "# R\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n## Later\n\n| x |\n|---|\n| y |\n"
	if err := os.WriteFile(path, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := addResultsRow(path, "| 3 | 4 |"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	want := "# R\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n## Later\n\n| x |\n|---|\n| y |\n"
	if string(b) != want {
		t.Fatalf("got\n%s\nwant\n%s", b, want)
	}
}
