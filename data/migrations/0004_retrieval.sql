CREATE TABLE `retrieval_jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`principal` text NOT NULL,
	`dataset_urn` text NOT NULL,
	`dataset` text NOT NULL,
	`transport` text NOT NULL,
	`status` text NOT NULL,
	`request` text NOT NULL,
	`rows` integer DEFAULT 0 NOT NULL,
	`bytes` integer DEFAULT 0 NOT NULL,
	`chunks` integer DEFAULT 0 NOT NULL,
	`error` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `retrieval_jobs_owner` ON `retrieval_jobs` (`owner_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `retrieval_jobs_created` ON `retrieval_jobs` (`created_at`);