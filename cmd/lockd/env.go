package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// envName returns the environment variable that sets flag name.
func envName(name string) string {
	return "LOCKD_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// applyEnv sets every flag not given on the command line from its LOCKD_*
// variable, if that is set. A bad value is an error naming the variable.
func applyEnv(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("%s=%q: %w", envName(f.Name), v, serr)
			}
		}
	})
	return err
}
