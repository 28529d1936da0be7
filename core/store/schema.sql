-- threadloom ledger schema 21, generated from core/store/models.py by `python -m threadloom.core.store.db`; do not edit

CREATE TABLE agent_file_changes (
	session_id VARCHAR NOT NULL,
	call_id VARCHAR NOT NULL,
	path VARCHAR NOT NULL,
	turn_id VARCHAR,
	tool_name VARCHAR NOT NULL,
	timestamp INTEGER,
	lines_added INTEGER DEFAULT '0' NOT NULL,
	lines_removed INTEGER DEFAULT '0' NOT NULL,
	PRIMARY KEY (session_id, call_id, path)
);

CREATE TABLE agent_sessions (
	id VARCHAR NOT NULL,
	source VARCHAR NOT NULL,
	model VARCHAR,
	project VARCHAR,
	project_path VARCHAR,
	created_at INTEGER,
	ended_at INTEGER,
	message_count INTEGER DEFAULT '0' NOT NULL,
	parent_session_id VARCHAR,
	parent_message_id VARCHAR,
	tool_call_id VARCHAR,
	task_description VARCHAR,
	task_status VARCHAR,
	is_subagent INTEGER DEFAULT '0' NOT NULL,
	context_token_limit INTEGER,
	context_tokens_used INTEGER,
	is_agentic INTEGER DEFAULT '0' NOT NULL,
	force_mode VARCHAR,
	workspace_path VARCHAR,
	external_id VARCHAR,
	kind VARCHAR NOT NULL,
	agent_id VARCHAR,
	agent_type VARCHAR,
	is_warmup INTEGER DEFAULT '0' NOT NULL,
	title VARCHAR,
	title_source VARCHAR,
	first_prompt VARCHAR,
	git_branch VARCHAR,
	cli_version VARCHAR,
	input_tokens INTEGER DEFAULT '0' NOT NULL,
	output_tokens INTEGER DEFAULT '0' NOT NULL,
	cache_creation_tokens INTEGER DEFAULT '0' NOT NULL,
	cache_read_tokens INTEGER DEFAULT '0' NOT NULL,
	turn_count INTEGER DEFAULT '0' NOT NULL,
	tool_call_count INTEGER DEFAULT '0' NOT NULL,
	branch_count INTEGER DEFAULT '0' NOT NULL,
	compaction_count INTEGER DEFAULT '0' NOT NULL,
	forked_from_session_id VARCHAR,
	cost_usd FLOAT,
	unpriced_messages INTEGER DEFAULT '0' NOT NULL,
	spawn_key VARCHAR,
	source_file_id INTEGER,
	updated_at INTEGER,
	PRIMARY KEY (id)
);

CREATE INDEX IF NOT EXISTS ix_agent_sessions_parent_session_id ON agent_sessions (parent_session_id);

CREATE INDEX IF NOT EXISTS ix_sessions_project ON agent_sessions (project_path);

CREATE TABLE agent_tool_calls (
	id VARCHAR NOT NULL,
	message_id VARCHAR,
	session_id VARCHAR NOT NULL,
	tool_name VARCHAR NOT NULL,
	tool_number INTEGER DEFAULT '0' NOT NULL,
	params_json VARCHAR,
	result_json VARCHAR,
	status VARCHAR,
	child_session_id VARCHAR,
	started_at INTEGER,
	completed_at INTEGER,
	entry_id INTEGER,
	result_entry_id INTEGER,
	turn_id VARCHAR,
	child_agent_id VARCHAR,
	PRIMARY KEY (id, session_id)
);

CREATE INDEX IF NOT EXISTS ix_tool_calls_child_agent ON agent_tool_calls (child_agent_id);

CREATE INDEX IF NOT EXISTS ix_tool_calls_entry ON agent_tool_calls (entry_id);

CREATE INDEX IF NOT EXISTS ix_tool_calls_result_entry ON agent_tool_calls (result_entry_id);

CREATE INDEX IF NOT EXISTS ix_tool_calls_session_entry ON agent_tool_calls (session_id, entry_id);

CREATE TABLE agent_turns (
	id VARCHAR NOT NULL,
	session_id VARCHAR NOT NULL,
	parent_turn_id VARCHAR,
	query_message_ids VARCHAR NOT NULL,
	response_message_id VARCHAR,
	model VARCHAR,
	token_count INTEGER DEFAULT '0' NOT NULL,
	timestamp INTEGER,
	has_children INTEGER DEFAULT '0' NOT NULL,
	tool_call_count INTEGER DEFAULT '0' NOT NULL,
	started_at INTEGER,
	sequence INTEGER NOT NULL,
	child_count INTEGER DEFAULT '0' NOT NULL,
	last_entry_uuid VARCHAR,
	PRIMARY KEY (id, session_id)
);

CREATE INDEX IF NOT EXISTS ix_agent_turns_session_id ON agent_turns (session_id);

CREATE TABLE agent_usage (
	message_id VARCHAR NOT NULL,
	request_id VARCHAR,
	session_id VARCHAR NOT NULL,
	turn_id VARCHAR,
	entry_id INTEGER,
	model VARCHAR,
	is_sidechain INTEGER DEFAULT '0' NOT NULL,
	input_tokens INTEGER DEFAULT '0' NOT NULL,
	output_tokens INTEGER DEFAULT '0' NOT NULL,
	cache_creation_tokens INTEGER DEFAULT '0' NOT NULL,
	cache_read_tokens INTEGER DEFAULT '0' NOT NULL,
	timestamp INTEGER,
	recorded_cost_usd FLOAT,
	cache_write_1h_tokens INTEGER DEFAULT '0' NOT NULL,
	web_searches INTEGER DEFAULT '0' NOT NULL,
	cost_usd FLOAT,
	priced INTEGER DEFAULT '0' NOT NULL,
	PRIMARY KEY (message_id)
);

CREATE INDEX IF NOT EXISTS ix_agent_usage_session_id ON agent_usage (session_id);

CREATE INDEX IF NOT EXISTS ix_agent_usage_turn_id ON agent_usage (turn_id);

CREATE INDEX IF NOT EXISTS ix_usage_unpriced ON agent_usage (message_id) WHERE priced = 0;

CREATE TABLE ledger_meta (
	"key" VARCHAR NOT NULL,
	value VARCHAR,
	PRIMARY KEY ("key")
);

CREATE TABLE model_rates (
	model VARCHAR NOT NULL,
	day VARCHAR NOT NULL,
	rates VARCHAR NOT NULL,
	PRIMARY KEY (model, day)
);

CREATE TABLE session_signals (
	id INTEGER NOT NULL,
	session_id VARCHAR NOT NULL,
	turn_id VARCHAR,
	name VARCHAR NOT NULL,
	severity VARCHAR NOT NULL,
	seq INTEGER,
	detail VARCHAR NOT NULL,
	evidence VARCHAR NOT NULL,
	PRIMARY KEY (id)
);

CREATE INDEX IF NOT EXISTS ix_session_signals_name ON session_signals (name);

CREATE INDEX IF NOT EXISTS ix_session_signals_session_id ON session_signals (session_id);

CREATE TABLE source_files (
	id INTEGER NOT NULL,
	path VARCHAR NOT NULL,
	agent VARCHAR NOT NULL,
	kind VARCHAR NOT NULL,
	size INTEGER NOT NULL,
	mtime_ns INTEGER NOT NULL,
	inode INTEGER,
	bytes_ingested INTEGER NOT NULL,
	lines_ingested INTEGER NOT NULL,
	content_hash VARCHAR,
	open_tail_offset INTEGER,
	ends_with_newline BOOLEAN NOT NULL,
	status VARCHAR NOT NULL,
	error VARCHAR,
	ingested_at INTEGER,
	project_key VARCHAR,
	ctime_ns INTEGER,
	PRIMARY KEY (id),
	UNIQUE (path)
);

CREATE TABLE source_roots (
	path VARCHAR NOT NULL,
	added_at INTEGER,
	PRIMARY KEY (path)
);

CREATE TABLE stats_messages (
	session_id VARCHAR NOT NULL,
	bucket INTEGER NOT NULL,
	model VARCHAR NOT NULL,
	messages INTEGER DEFAULT '0' NOT NULL,
	PRIMARY KEY (session_id, bucket, model)
);

CREATE TABLE stats_pending (
	session_id VARCHAR NOT NULL,
	root_session_id VARCHAR,
	since_bucket INTEGER,
	PRIMARY KEY (session_id)
);

CREATE TABLE stats_rollup (
	id INTEGER NOT NULL,
	bucket INTEGER,
	session_id VARCHAR NOT NULL,
	root_session_id VARCHAR NOT NULL,
	model VARCHAR NOT NULL,
	project_path VARCHAR NOT NULL,
	project VARCHAR NOT NULL,
	agent VARCHAR NOT NULL,
	messages INTEGER DEFAULT '0' NOT NULL,
	api_messages INTEGER DEFAULT '0' NOT NULL,
	input_tokens INTEGER DEFAULT '0' NOT NULL,
	output_tokens INTEGER DEFAULT '0' NOT NULL,
	cache_creation_tokens INTEGER DEFAULT '0' NOT NULL,
	cache_read_tokens INTEGER DEFAULT '0' NOT NULL,
	cost_usd FLOAT,
	unpriced_messages INTEGER DEFAULT '0' NOT NULL,
	tool_calls INTEGER DEFAULT '0' NOT NULL,
	failed_tool_calls INTEGER DEFAULT '0' NOT NULL,
	lines_added INTEGER DEFAULT '0' NOT NULL,
	lines_removed INTEGER DEFAULT '0' NOT NULL,
	PRIMARY KEY (id)
);

CREATE INDEX IF NOT EXISTS ix_stats_rollup_bucket ON stats_rollup (bucket);

CREATE INDEX IF NOT EXISTS ix_stats_rollup_session_id ON stats_rollup (session_id);

CREATE TABLE entries (
	id INTEGER NOT NULL,
	source_file_id INTEGER NOT NULL,
	byte_offset INTEGER NOT NULL,
	line_number INTEGER NOT NULL,
	newline BOOLEAN NOT NULL,
	hash VARCHAR NOT NULL,
	entry_type VARCHAR,
	subtype VARCHAR,
	known BOOLEAN NOT NULL,
	parse_error VARCHAR,
	uuid VARCHAR,
	parent_uuid VARCHAR,
	logical_parent_uuid VARCHAR,
	ref_uuid VARCHAR,
	session_id VARCHAR,
	agent_id VARCHAR,
	timestamp INTEGER,
	is_sidechain BOOLEAN NOT NULL,
	is_meta BOOLEAN NOT NULL,
	role VARCHAR,
	content VARCHAR,
	thinking VARCHAR,
	tool_text VARCHAR,
	model VARCHAR,
	message_id VARCHAR,
	request_id VARCHAR,
	seq INTEGER,
	turn_id VARCHAR,
	dup_of INTEGER,
	raw BLOB NOT NULL,
	PRIMARY KEY (id),
	CONSTRAINT uq_entries_file_offset UNIQUE (source_file_id, byte_offset),
	FOREIGN KEY(source_file_id) REFERENCES source_files (id)
);

CREATE INDEX IF NOT EXISTS ix_entries_session_seq ON entries (session_id, seq);

CREATE INDEX IF NOT EXISTS ix_entries_summary ON entries (ref_uuid) WHERE entry_type = 'summary';

CREATE INDEX IF NOT EXISTS ix_entries_uuid ON entries (uuid);

CREATE INDEX IF NOT EXISTS ix_entries_session_seq ON entries (session_id, seq);

CREATE INDEX IF NOT EXISTS ix_entries_uuid ON entries (uuid);

CREATE INDEX IF NOT EXISTS ix_tool_calls_session_entry ON agent_tool_calls (session_id, entry_id);

CREATE INDEX IF NOT EXISTS ix_entries_summary ON entries (ref_uuid) WHERE entry_type = 'summary';

CREATE INDEX IF NOT EXISTS ix_tool_calls_child_agent ON agent_tool_calls (child_agent_id);

CREATE INDEX IF NOT EXISTS ix_tool_calls_entry ON agent_tool_calls (entry_id);

CREATE INDEX IF NOT EXISTS ix_tool_calls_result_entry ON agent_tool_calls (result_entry_id);

CREATE INDEX IF NOT EXISTS ix_sessions_project ON agent_sessions (project_path);

CREATE INDEX IF NOT EXISTS ix_usage_unpriced ON agent_usage (message_id) WHERE priced = 0;

CREATE TABLE IF NOT EXISTS derived_pending (
	kind VARCHAR NOT NULL,
	session_id VARCHAR NOT NULL,
	PRIMARY KEY (kind, session_id)
);

CREATE TABLE IF NOT EXISTS signals_state (
	session_id VARCHAR NOT NULL,
	cut INTEGER NOT NULL,
	cut_entry INTEGER NOT NULL,
	seen_id INTEGER NOT NULL,
	format VARCHAR NOT NULL,
	carry BLOB NOT NULL,
	PRIMARY KEY (session_id)
);

CREATE TABLE IF NOT EXISTS signals_prompts (
	session_id VARCHAR NOT NULL,
	"key" INTEGER NOT NULL,
	seq INTEGER NOT NULL,
	entry_id INTEGER NOT NULL,
	turn_id VARCHAR,
	replies INTEGER NOT NULL,
	PRIMARY KEY (session_id, "key", seq)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS source_versions (
	version_file_id INTEGER NOT NULL,
	source_file_id INTEGER NOT NULL,
	superseded_at INTEGER NOT NULL,
	records INTEGER NOT NULL,
	removed INTEGER NOT NULL,
	entry_ids BLOB NOT NULL,
	sessions VARCHAR NOT NULL,
	PRIMARY KEY (version_file_id),
	FOREIGN KEY(version_file_id) REFERENCES source_files (id),
	FOREIGN KEY(source_file_id) REFERENCES source_files (id)
);

CREATE INDEX IF NOT EXISTS ix_source_versions_file ON source_versions (source_file_id);

CREATE TABLE IF NOT EXISTS source_reads (
	source_file_id INTEGER NOT NULL,
	read_at INTEGER NOT NULL,
	bytes INTEGER NOT NULL,
	PRIMARY KEY (source_file_id, read_at)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS hidden (
	kind VARCHAR NOT NULL,
	"key" VARCHAR NOT NULL,
	hidden_at INTEGER,
	PRIMARY KEY (kind, "key")
);

CREATE TABLE IF NOT EXISTS episodes (
	turn_id VARCHAR NOT NULL,
	session_id VARCHAR NOT NULL,
	first_seq INTEGER NOT NULL,
	last_seq INTEGER NOT NULL,
	started_at INTEGER,
	prompt_entry INTEGER,
	answer_entry INTEGER,
	files VARCHAR NOT NULL,
	commands VARCHAR NOT NULL,
	errors VARCHAR NOT NULL,
	tools VARCHAR NOT NULL,
	subagents VARCHAR NOT NULL,
	vector BLOB,
	PRIMARY KEY (turn_id, session_id)
);

CREATE INDEX IF NOT EXISTS ix_episodes_session ON episodes (session_id, first_seq);

CREATE INDEX IF NOT EXISTS ix_episodes_unembedded ON episodes (session_id) WHERE vector IS NULL;

CREATE INDEX IF NOT EXISTS ix_episodes_started ON episodes (started_at);

CREATE TABLE IF NOT EXISTS memory_marks (
	kind VARCHAR NOT NULL,
	target_type VARCHAR NOT NULL,
	target_id VARCHAR NOT NULL,
	value VARCHAR NOT NULL,
	session_id VARCHAR,
	uuid VARCHAR,
	author VARCHAR NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (kind, target_type, target_id, value)
);

CREATE TABLE IF NOT EXISTS memory_entries (
	id VARCHAR NOT NULL,
	kind VARCHAR NOT NULL,
	scope VARCHAR NOT NULL,
	scope_key VARCHAR NOT NULL,
	title VARCHAR NOT NULL,
	created_at INTEGER NOT NULL,
	created_by VARCHAR NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (scope, scope_key, title)
);

CREATE TABLE IF NOT EXISTS memory_versions (
	entry_id VARCHAR NOT NULL,
	version INTEGER NOT NULL,
	content VARCHAR NOT NULL,
	reason VARCHAR,
	author VARCHAR NOT NULL,
	created_at INTEGER NOT NULL,
	conflict INTEGER NOT NULL DEFAULT 0,
	vid VARCHAR,
	PRIMARY KEY (entry_id, version)
);

CREATE TABLE IF NOT EXISTS memory_relations (
	source_type VARCHAR NOT NULL,
	source_id VARCHAR NOT NULL,
	relation VARCHAR NOT NULL,
	target_type VARCHAR NOT NULL,
	target_id VARCHAR NOT NULL,
	author VARCHAR NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (source_type, source_id, relation, target_type, target_id)
);

CREATE TABLE IF NOT EXISTS memory_conflicts (
	entry_id VARCHAR NOT NULL,
	version_a INTEGER NOT NULL,
	version_b INTEGER NOT NULL,
	detected_at INTEGER NOT NULL,
	resolved_at INTEGER,
	resolved_by VARCHAR,
	resolution VARCHAR,
	PRIMARY KEY (entry_id, version_b)
);

CREATE TABLE IF NOT EXISTS sync_pushed (
	hub VARCHAR NOT NULL,
	source_file_id INTEGER NOT NULL,
	hub_source_id INTEGER NOT NULL,
	generation INTEGER NOT NULL,
	items INTEGER NOT NULL,
	end_offset INTEGER NOT NULL,
	digest VARCHAR NOT NULL,
	content_hash VARCHAR,
	bytes_ingested INTEGER NOT NULL,
	redacted INTEGER NOT NULL,
	PRIMARY KEY (hub, source_file_id)
);

CREATE TABLE IF NOT EXISTS sync_pulled (
	hub VARCHAR NOT NULL,
	hub_source_id INTEGER NOT NULL,
	source_file_id INTEGER NOT NULL,
	machine VARCHAR NOT NULL,
	who VARCHAR,
	generation INTEGER NOT NULL,
	items INTEGER NOT NULL,
	end_offset INTEGER NOT NULL,
	digest VARCHAR NOT NULL,
	redacted INTEGER NOT NULL,
	PRIMARY KEY (hub, hub_source_id)
);

CREATE INDEX IF NOT EXISTS ix_sync_pulled_file ON sync_pulled (source_file_id);

CREATE TABLE IF NOT EXISTS sync_rows (
	hub VARCHAR NOT NULL,
	tbl VARCHAR NOT NULL,
	row_hash VARCHAR NOT NULL,
	PRIMARY KEY (hub, tbl, row_hash)
) WITHOUT ROWID;

CREATE UNIQUE INDEX IF NOT EXISTS ix_memory_versions_vid ON memory_versions (vid);

CREATE INDEX IF NOT EXISTS ix_entries_titles ON entries (session_id) WHERE entry_type IN ('custom-title', 'custom-title-file', 'ai-title', 'agent-name');

CREATE INDEX IF NOT EXISTS ix_sessions_listing ON agent_sessions (project_path, is_subagent, message_count, ended_at, created_at, source, project, input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, cost_usd, unpriced_messages);

CREATE INDEX IF NOT EXISTS ix_tool_calls_session_entry ON agent_tool_calls (session_id, entry_id);

CREATE INDEX IF NOT EXISTS ix_entries_undo ON entries (session_id) WHERE subtype = 'undo';

CREATE VIEW IF NOT EXISTS agent_messages AS
SELECT
    COALESCE(e.uuid, 'entry-' || e.id) AS id,
    e.session_id AS session_id,
    e.role AS role,
    COALESCE(e.content, '') AS content,
    e.seq AS sequence,
    e.timestamp AS timestamp,
    NULL AS checkpoint_id,
    CASE WHEN s.is_agentic THEN 1 ELSE 0 END AS is_agentic,
    0 AS is_plan_execution,
    NULL AS context_json,
    NULL AS cursor_rules_json,
    CAST(e.raw AS TEXT) AS metadata_json,
    e.id AS entry_id,
    e.entry_type AS entry_type,
    e.model AS model,
    e.turn_id AS turn_id,
    e.is_meta AS is_meta,
    e.thinking AS thinking
FROM entries e LEFT JOIN agent_sessions s ON s.id = e.session_id
WHERE e.seq IS NOT NULL;

CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5(content, thinking, tool_text, content='entries', content_rowid='id', tokenize='unicode61 remove_diacritics 2');

CREATE VIRTUAL TABLE IF NOT EXISTS search_vocab USING fts5vocab(search_fts, 'row');
