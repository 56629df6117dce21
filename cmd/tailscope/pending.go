package main

import "errors"

func runRecommend(e *env, args []string) error {
	return errors.New("recommend is not available yet")
}

func runConvert(e *env, args []string) error {
	return errors.New("convert is not available yet")
}
