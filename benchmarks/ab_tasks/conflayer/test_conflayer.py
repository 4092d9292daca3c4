import copy
import unittest

from conflayer import DEFAULTS, SchemaError, deep_merge, load
from conflayer.env import from_environ
from conflayer.merge import flatten, unflatten

PRISTINE = copy.deepcopy(DEFAULTS)


class MergeTest(unittest.TestCase):
    def test_nested(self):
        base = {"a": {"b": 1, "c": {"d": 2}}, "x": [1]}
        merged = deep_merge(base, {"a": {"c": {"e": 3}}, "x": [2]})
        self.assertEqual(merged, {"a": {"b": 1, "c": {"d": 2, "e": 3}}, "x": [2]})

    def test_arguments_unchanged(self):
        base = {"a": {"b": 1, "c": {"d": 2}}}
        override = {"a": {"c": {"d": 5}}}
        deep_merge(base, override)
        self.assertEqual(base, {"a": {"b": 1, "c": {"d": 2}}})
        self.assertEqual(override, {"a": {"c": {"d": 5}}})

    def test_none_removes(self):
        self.assertEqual(deep_merge({"a": 1, "b": 2}, {"a": None}), {"b": 2})

    def test_flatten_round_trip(self):
        tree = {"a": {"b": 1, "c": {"d": 2}}, "e": 3}
        self.assertEqual(flatten(tree), {"a.b": 1, "a.c.d": 2, "e": 3})
        self.assertEqual(unflatten(flatten(tree)), tree)


class EnvTest(unittest.TestCase):
    def test_nested_keys(self):
        env = {"APP__DATABASE__POOL__SIZE": "9", "APP__APP__DEBUG": "yes", "HOME": "/root"}
        self.assertEqual(
            from_environ(env), {"app": {"debug": "yes"}, "database": {"pool": {"size": "9"}}}
        )


class LoadTest(unittest.TestCase):
    def test_default(self):
        s = load()
        self.assertEqual(s["database"]["port"], 5432)
        self.assertEqual(s["app"]["allowed_hosts"], ["localhost"])

    def test_prod(self):
        s = load("prod")
        self.assertEqual(s["database"]["host"], "db.internal")
        self.assertEqual(s["database"]["pool"], {"size": 20, "timeout": 5.0})
        self.assertEqual(s["database"]["name"], "shop")

    def test_environment_wins(self):
        s = load("dev", {"APP__DATABASE__PORT": "6000", "APP__FEATURES__SEARCH_V2": "off"})
        self.assertEqual(s["database"]["port"], 6000)
        self.assertIs(s["features"]["search_v2"], False)
        self.assertIs(s["features"]["new_checkout"], True)

    def test_loads_are_independent(self):
        load("dev")
        load("prod")
        s = load("test")
        self.assertEqual(s["database"]["host"], "localhost")
        self.assertEqual(s["database"]["pool"], {"size": 5, "timeout": 30.0})
        self.assertEqual(s["app"]["workers"], 2)
        self.assertEqual(DEFAULTS, PRISTINE)

    def test_bad_values(self):
        with self.assertRaises(SchemaError):
            load("default", {"APP__DATABASE__PORT": "fifty"})
        with self.assertRaises(SchemaError):
            load("default", {"APP__LOGGING__LEVEL": "loud"})
        with self.assertRaises(SchemaError):
            load("default", {"APP__DATABASE__COLOUR": "red"})


if __name__ == "__main__":
    unittest.main()
