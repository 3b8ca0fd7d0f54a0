package elections

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
)

// The files Run writes to Config.Out.
const (
	CSVFile = "elections.csv"
	SVGFile = "elections.svg"
)

// Run measures every algorithm, cluster size and scenario cfg names,
// prints the table to cfg.Output and writes CSVFile and SVGFile to
// cfg.Out. It returns the rows in report order. The classic rows take
// milliseconds; each Raft run takes about four RaftTimeouts of wall time,
// so the Raft rows take most of the time. It stops early, with ctx's
// error, when ctx ends.
func Run(ctx context.Context, cfg Config) ([]Row, error) {
	rows, err := Measure(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Output != nil {
		if err := WriteTable(cfg.Output, rows); err != nil {
			return rows, err
		}
	}
	var pool []PoolRow
	if len(cfg.PoolNs) > 0 && len(cfg.PoolSizes) > 0 {
		if pool, err = MeasurePool(ctx, cfg.PoolNs, cfg.PoolSizes, cfg.Seeds, cfg.RaftTimeout); err != nil {
			return rows, err
		}
		if cfg.Output != nil {
			fmt.Fprintln(cfg.Output)
			if err := WritePoolTable(cfg.Output, pool); err != nil {
				return rows, err
			}
		}
	}
	if cfg.Out == "" {
		return rows, nil
	}
	if err := WriteFiles(cfg.Out, rows); err != nil {
		return rows, err
	}
	if pool != nil {
		return rows, WritePoolFiles(cfg.Out, pool)
	}
	return rows, nil
}

// Measure runs the elections cfg names and returns one row per
// algorithm, cluster size and scenario, in that order.
func Measure(ctx context.Context, cfg Config) ([]Row, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "bench")
	var rows []Row
	for _, alg := range cfg.Algorithms {
		for _, n := range cfg.Ns {
			for _, sc := range Scenarios {
				runs := 1
				if sc == Random {
					runs = cfg.Seeds
				}
				samples := make([]sample, 0, runs)
				for seed := uint64(1); seed <= uint64(runs); seed++ {
					if err := ctx.Err(); err != nil {
						return nil, err
					}
					s, err := measure(ctx, cfg, alg, n, sc, seed)
					if err != nil {
						return nil, err
					}
					samples = append(samples, s)
				}
				r := summarize(alg, n, sc, samples)
				log.Info("measured", "algorithm", alg, "n", n, "scenario", sc, "runs", runs,
					"messages", r.Messages, "time", r.Time)
				rows = append(rows, r)
			}
		}
	}
	return rows, nil
}

func measure(ctx context.Context, cfg Config, alg Algorithm, n int, sc Scenario, seed uint64) (sample, error) {
	if alg.classic() {
		return measureClassic(alg, n, sc, seed)
	}
	return measureRaft(ctx, n, sc, seed, cfg.RaftTimeout)
}

// WriteFiles writes CSVFile and SVGFile to dir, creating it if needed.
func WriteFiles(dir string, rows []Row) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer, []Row) error
	}{
		{CSVFile, WriteCSV},
		{SVGFile, WriteSVG},
	} {
		if err := writeFile(filepath.Join(dir, f.name), rows, f.write); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, rows []Row, write func(io.Writer, []Row) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := write(f, rows); err != nil {
		_ = f.Close()
		return fmt.Errorf("bench: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}
