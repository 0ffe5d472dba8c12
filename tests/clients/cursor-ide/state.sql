-- Cursor's global `state.vscdb` (see README.md): its two key-value tables, and four synthetic
-- conversations ("composers"): one with a sub-composer it started, one from an older build
-- that keeps its messages inline, and an empty panel that is not a session.
CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);

INSERT INTO ItemTable VALUES
  ('cursorAuth/cachedSignUpType', 'Auth_0'),
  ('workbench.panel.composerChatViewPane.hidden', 'false');

INSERT INTO cursorDiskKV VALUES
  ('composerData:4c1e7a52-orchard', '{"_v":10,"composerId":"4c1e7a52-orchard","name":"Uploader retries forever","text":"also check the t","richText":"{\"root\":{}}","createdAt":1786000000000,"lastUpdatedAt":1786000400000,"status":"completed","unifiedMode":"agent","isAgentic":true,"modelConfig":{"modelName":"claude-4.5-sonnet","maxMode":false},"subComposerIds":["9d2b61f0-explore"],"fullConversationHeadersOnly":[{"bubbleId":"b-o1","type":1},{"bubbleId":"b-o2","type":2,"serverBubbleId":"s-o2"},{"bubbleId":"b-o3","type":2},{"bubbleId":"b-o4","type":2},{"bubbleId":"b-o5","type":2},{"bubbleId":"b-o6","type":2}],"context":{"fileSelections":[{"uri":{"fsPath":"/home/dev/orchard/src/upload.rs"}}]},"originalFileStates":{"file:///home/dev/orchard/src/upload.rs":{"content":"fn upload() { loop { retry(); } }"}},"codeBlockData":{},"createdOnBranch":"main"}'),
  ('bubbleId:4c1e7a52-orchard:b-o1', '{"_v":3,"type":1,"bubbleId":"b-o1","text":"The uploader retries forever when the server returns 503. Cap the retries with exponential backoff.","richText":"{\"root\":{}}","createdAt":"2026-08-10T08:26:40.000Z","requestId":"r-1","modelInfo":{"modelName":"claude-4.5-sonnet"},"workspaceUris":["file:///home/dev/orchard%20app"],"attachedCodeChunks":[]}'),
  ('bubbleId:4c1e7a52-orchard:b-o2', '{"_v":3,"type":2,"bubbleId":"b-o2","text":"The retry loop in src/upload.rs has no cap. I will add a backoff with a limit of five attempts.","thinking":{"text":"Look for the loop that calls retry() without a bound.","signature":"sig"},"createdAt":"2026-08-10T08:26:52.000Z","requestId":"r-1","codeBlocks":[],"tokenCount":{"inputTokens":1200,"outputTokens":80}}'),
  ('bubbleId:4c1e7a52-orchard:b-o3', '{"_v":3,"type":2,"bubbleId":"b-o3","text":"","createdAt":"2026-08-10T08:27:00.000Z","toolFormerData":{"tool":15,"name":"run_terminal_cmd","toolCallId":"toolu_01","status":"completed","rawArgs":"{\"command\":\"cargo test upload\",\"is_background\":false}","result":"{\"output\":\"test upload::retries_are_capped ... ok\",\"exitCode\":0}"}}'),
  ('bubbleId:4c1e7a52-orchard:b-o4', '{"_v":3,"type":2,"bubbleId":"b-o4","text":"","capabilityType":30,"createdAt":"2026-08-10T08:27:01.000Z"}'),
  ('bubbleId:4c1e7a52-orchard:b-o5', '{"_v":3,"type":2,"bubbleId":"b-o5","text":"","createdAt":"2026-08-10T08:27:10.000Z","toolFormerData":{"tool":7,"name":"edit_file","toolCallId":"toolu_02","status":"error","rawArgs":"{\"target_file\":\"src/upload.rs\"}","result":"{\"error\":\"file is read-only\"}"}}'),
  ('bubbleId:4c1e7a52-orchard:b-o6', '{"_v":3,"type":2,"bubbleId":"b-o6","text":"Retries are now capped at five with exponential backoff starting at 200 ms.","createdAt":"2026-08-10T08:30:00.000Z"}'),
  -- A bubble of a branch the conversation no longer shows (an edited prompt).
  ('bubbleId:4c1e7a52-orchard:b-old', '{"_v":3,"type":1,"bubbleId":"b-old","text":"An abandoned first wording of the prompt","createdAt":"2026-08-10T08:26:00.000Z"}'),
  ('composerData:9d2b61f0-explore', '{"_v":10,"composerId":"9d2b61f0-explore","name":"Find retry settings","createdAt":1786000100000,"lastUpdatedAt":1786000150000,"status":"completed","fullConversationHeadersOnly":[{"bubbleId":"b-e1","type":1},{"bubbleId":"b-e2","type":2}]}'),
  ('bubbleId:9d2b61f0-explore:b-e1', '{"_v":3,"type":1,"bubbleId":"b-e1","text":"Where are upload retries configured?","createdAt":"2026-08-10T08:28:20.000Z","workspaceProjectDir":"/home/dev/orchard"}'),
  ('bubbleId:9d2b61f0-explore:b-e2', '{"_v":3,"type":2,"bubbleId":"b-e2","text":"In config/upload.toml under [retry].","createdAt":"2026-08-10T08:28:30.000Z"}'),
  ('composerData:1a0b9c8d-legacy', '{"composerId":"1a0b9c8d-legacy","createdAt":1780000000000,"lastUpdatedAt":1780000060000,"status":"completed","conversation":[{"type":1,"bubbleId":"l-1","text":"What does the borrow checker complain about in parse_header?","relevantFiles":["src/http.rs"]},{"type":2,"bubbleId":"l-2","text":"The returned slice outlives the buffer it borrows from; return an owned String instead."}]}'),
  ('composerData:77e3f0aa-empty', '{"_v":10,"composerId":"77e3f0aa-empty","text":"","fullConversationHeadersOnly":[],"conversationMap":{},"status":"none","createdAt":1786000500000}'),
  ('checkpointId:4c1e7a52-orchard:b-o2', '{"files":[]}');
