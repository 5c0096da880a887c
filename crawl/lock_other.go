//go:build !unix

package crawl

import (
	"fmt"
	"os"
)

// lockDir opens path; without flock, two processes running one job are not
// kept apart.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("crawl: %w", err)
	}
	return f, nil
}
