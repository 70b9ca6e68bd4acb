CREATE TABLE `deployments` (
	`id` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`name` text NOT NULL,
	`upstream` text NOT NULL,
	`strip_prefix` integer NOT NULL,
	`websocket` integer NOT NULL,
	`timeout_seconds` real,
	`requires_auth` integer NOT NULL,
	`forward_authorization` integer NOT NULL,
	`created_by` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `deployments_kind_name` ON `deployments` (`kind`,`name`);