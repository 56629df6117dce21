package main

import "errors"

func runRecommend(e *env, args []string) error {
	return errors.New("recommend is not available yet")
}
