CREATE TABLE `job_shadows` (
	`job_id` text PRIMARY KEY NOT NULL,
	`federation_id` text NOT NULL,
	`cluster_selector` text NOT NULL,
	`user_id` text NOT NULL,
	`created_at` text NOT NULL
);
