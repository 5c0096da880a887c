package redisstore

// ScriptCalls is scriptCalls, for the tests of package redisstore_test.
var ScriptCalls = scriptCalls
