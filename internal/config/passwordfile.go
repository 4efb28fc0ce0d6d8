package config

import (
	"fmt"
	"net/url"
	"os"
	"strings"
)

// readSecretFile reads a file holding one secret (a password, as a compose
// or Kubernetes secret mounts it), without the white space around it;
// setting names the variable that gave path, for messages.
func readSecretFile(setting, path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s=%q cannot be read: %v", setting, path, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s=%q is empty; it must hold the password", setting, path)
	}
	return s, nil
}

// withPasswordFile returns the comma-separated URLs of list (the value of
// urlSetting) with the password read from path (the value of fileSetting)
// put beside the user each of them names: the password stays out of the
// URL setting, so out of the environment `docker inspect` shows. Every URL
// must name a user and carry no password of its own.
func withPasswordFile(urlSetting, list, fileSetting, path string) (string, error) {
	pw, err := readSecretFile(fileSetting, path)
	if err != nil {
		return "", err
	}
	var out []string
	for _, raw := range SplitURLs(list) {
		u, err := url.Parse(raw)
		if err != nil || u.User == nil || u.User.Username() == "" {
			return "", fmt.Errorf("%s is set but %s=%q names no user; give the user in the URL without its password, e.g. https://noticesd@es1:9200 or rediss://noticesd@redis:6380/0", fileSetting, urlSetting, redactURL(raw))
		}
		if _, has := u.User.Password(); has {
			return "", fmt.Errorf("%s is set and %s=%q has a password too; give the password in one of them", fileSetting, urlSetting, redactURL(raw))
		}
		u.User = url.UserPassword(u.User.Username(), pw)
		out = append(out, u.String())
	}
	return strings.Join(out, ","), nil
}
