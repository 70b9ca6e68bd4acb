CREATE TABLE `execution_gate` (
	`id` integer PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`config` text NOT NULL,
	`bound_by` text NOT NULL,
	`bound_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`runtime` text NOT NULL,
	`runtime_job_id` text NOT NULL,
	`status` text NOT NULL,
	`source` text NOT NULL,
	`source_cluster_id` text,
	`source_cluster_name` text,
	`user_id` text NOT NULL,
	`tenant_id` text NOT NULL,
	`audit_actor` text NOT NULL,
	`cluster_selector` text NOT NULL,
	`entrypoint` text NOT NULL,
	`env_vars` text NOT NULL,
	`user_attrs` text NOT NULL,
	`metadata` text NOT NULL,
	`delegated_access` text,
	`python_packages` text NOT NULL,
	`timeout_seconds` integer,
	`timed_out` integer DEFAULT false NOT NULL,
	`error_type` text,
	`error_message` text,
	`submitted_at` text NOT NULL,
	`started_at` text,
	`ended_at` text,
	`logs_purged_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `jobs_user_submitted` ON `jobs` (`user_id`,`submitted_at`);--> statement-breakpoint
CREATE INDEX `jobs_status` ON `jobs` (`status`);--> statement-breakpoint
CREATE UNIQUE INDEX `jobs_runtime_job_id` ON `jobs` (`runtime_job_id`);