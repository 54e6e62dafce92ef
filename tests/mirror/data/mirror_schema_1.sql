-- A mirror database made by payroll-async's released schema (version 1, commit f489ead):
-- four collections mirrored from the emulator (seed 31), then a run after churn
-- (1 inserted, 2 updated, 1 deleted). Ids are 32 hex digits, as that schema wrote them.
BEGIN TRANSACTION;
CREATE TABLE employer_identifiers (
	id CHAR(32) NOT NULL, 
	display_name TEXT NOT NULL, 
	identifier TEXT NOT NULL, 
	created_at DATETIME NOT NULL, 
	mirror_first_seen_at DATETIME NOT NULL, 
	mirror_last_seen_at DATETIME NOT NULL, 
	mirror_deleted_at DATETIME, 
	PRIMARY KEY (id)
);
INSERT INTO "employer_identifiers" VALUES('042d97b7a1a7414d85a345077b258a7a','Globex Holdings #0','41-1000031','2023-09-07 06:13:20.000000','2026-11-25 01:25:18.088717','2026-11-25 01:25:18.088717',NULL);
INSERT INTO "employer_identifiers" VALUES('5b8db74673394d178ba8880cf4d84ea0','Gringotts Group #1','82-7435792','2023-09-07 07:13:20.000000','2026-11-25 01:25:18.088717','2026-11-25 01:25:18.088717',NULL);
INSERT INTO "employer_identifiers" VALUES('318f048aef724eeab4f5157e1af21cc6','Oceanic Group #2','23-3871553','2023-09-07 08:13:20.000000','2026-11-25 01:25:18.088717','2026-11-25 01:25:18.088717',NULL);
CREATE TABLE mirror_changes (
	change_id INTEGER NOT NULL, 
	run_id CHAR(32) NOT NULL, 
	collection TEXT NOT NULL, 
	item_id CHAR(32) NOT NULL, 
	change TEXT NOT NULL, 
	at DATETIME NOT NULL, 
	PRIMARY KEY (change_id)
);
INSERT INTO "mirror_changes" VALUES(1,'c90f9088147942a0a0aed9ad94c7d60c','payroll-connections','f0ce6e742daf408c9c58baaab9204638','inserted','2026-11-25 01:25:18.055594');
INSERT INTO "mirror_changes" VALUES(2,'c90f9088147942a0a0aed9ad94c7d60c','payroll-connections','e13bf6feb0614c58b579d114759cc423','inserted','2026-11-25 01:25:18.055594');
INSERT INTO "mirror_changes" VALUES(3,'c90f9088147942a0a0aed9ad94c7d60c','payroll-connections','8d472809fc4044759bc7c012812bee46','inserted','2026-11-25 01:25:18.055594');
INSERT INTO "mirror_changes" VALUES(4,'c90f9088147942a0a0aed9ad94c7d60c','payroll-connections','f8a5dd4d6f924c4da8f594a9f76cf0dd','inserted','2026-11-25 01:25:18.055594');
INSERT INTO "mirror_changes" VALUES(5,'c90f9088147942a0a0aed9ad94c7d60c','payroll-connections','c46f2c6979b44a209591f7994340ac95','inserted','2026-11-25 01:25:18.055594');
INSERT INTO "mirror_changes" VALUES(6,'c90f9088147942a0a0aed9ad94c7d60c','payroll-connections','f1b9ae160bf1418c9b167b93a1fb5901','inserted','2026-11-25 01:25:18.055594');
INSERT INTO "mirror_changes" VALUES(7,'c90f9088147942a0a0aed9ad94c7d60c','payroll-connections','236d7af88f534d8e9801695c44a1fd22','inserted','2026-11-25 01:25:18.055594');
INSERT INTO "mirror_changes" VALUES(8,'c90f9088147942a0a0aed9ad94c7d60c','payroll-connections','e1bc8242aa7a4c0aafc0613c384093a0','inserted','2026-11-25 01:25:18.055594');
INSERT INTO "mirror_changes" VALUES(9,'c90f9088147942a0a0aed9ad94c7d60c','payroll-connections','66c7e4dae63245088929f3b7adb945e4','inserted','2026-11-25 01:25:18.055594');
INSERT INTO "mirror_changes" VALUES(10,'c90f9088147942a0a0aed9ad94c7d60c','payroll-connections','ce06ebb58f114017a09fb8aeb99e06df','inserted','2026-11-25 01:25:18.055594');
INSERT INTO "mirror_changes" VALUES(11,'c90f9088147942a0a0aed9ad94c7d60c','payroll-connections','2ff6f13208d2484196e04f5bb1b410c4','inserted','2026-11-25 01:25:18.055594');
INSERT INTO "mirror_changes" VALUES(12,'c90f9088147942a0a0aed9ad94c7d60c','payroll-connections','8e0c01ca92314d39bddebfdcc1f75659','inserted','2026-11-25 01:25:18.055594');
INSERT INTO "mirror_changes" VALUES(13,'b04258e22fbf4ca5adc985bb8b2e6e71','employer-identifiers','042d97b7a1a7414d85a345077b258a7a','inserted','2026-11-25 01:25:18.088717');
INSERT INTO "mirror_changes" VALUES(14,'b04258e22fbf4ca5adc985bb8b2e6e71','employer-identifiers','5b8db74673394d178ba8880cf4d84ea0','inserted','2026-11-25 01:25:18.088717');
INSERT INTO "mirror_changes" VALUES(15,'b04258e22fbf4ca5adc985bb8b2e6e71','employer-identifiers','318f048aef724eeab4f5157e1af21cc6','inserted','2026-11-25 01:25:18.088717');
INSERT INTO "mirror_changes" VALUES(16,'65c08a5871744e1a896929b6bea5cfe4','webhooks','c393fd0e1cc64be5b83646bf0324aac3','inserted','2026-11-25 01:25:18.121679');
INSERT INTO "mirror_changes" VALUES(17,'65c08a5871744e1a896929b6bea5cfe4','webhooks','0b13a023af114ab1a40f16a76490fd4a','inserted','2026-11-25 01:25:18.121679');
INSERT INTO "mirror_changes" VALUES(18,'65c08a5871744e1a896929b6bea5cfe4','webhooks','8903a9c81cc949f6b344bafb23813fa9','inserted','2026-11-25 01:25:18.121679');
INSERT INTO "mirror_changes" VALUES(19,'e04871fdc1d147df919376c2c46cb203','update-groups','498142639a544303bd369f54bef017c7','inserted','2026-11-25 01:25:18.155688');
INSERT INTO "mirror_changes" VALUES(20,'e04871fdc1d147df919376c2c46cb203','update-groups','c73907fea4d24641b62861a6811850d8','inserted','2026-11-25 01:25:18.155688');
INSERT INTO "mirror_changes" VALUES(21,'e04871fdc1d147df919376c2c46cb203','update-groups','7319910e12de4447bd003697b7b882c2','inserted','2026-11-25 01:25:18.161734');
INSERT INTO "mirror_changes" VALUES(22,'e04871fdc1d147df919376c2c46cb203','update-groups','50290ffa7a6e424580775471d5d52666','inserted','2026-11-25 01:25:18.161734');
INSERT INTO "mirror_changes" VALUES(23,'e04871fdc1d147df919376c2c46cb203','update-groups','fddc9b2397844efb9c78d6fb6a97524b','inserted','2026-11-25 01:25:18.167344');
INSERT INTO "mirror_changes" VALUES(24,'e04871fdc1d147df919376c2c46cb203','update-groups','25dcf1e736744a3498668f5bd4795735','inserted','2026-11-25 01:25:18.167344');
INSERT INTO "mirror_changes" VALUES(25,'947bd608e971410eab6a77ba15883c71','payroll-connections','c46f2c6979b44a209591f7994340ac95','updated','2026-11-25 01:25:18.198699');
INSERT INTO "mirror_changes" VALUES(26,'947bd608e971410eab6a77ba15883c71','payroll-connections','e1bc8242aa7a4c0aafc0613c384093a0','updated','2026-11-25 01:25:18.198699');
INSERT INTO "mirror_changes" VALUES(27,'947bd608e971410eab6a77ba15883c71','payroll-connections','a68139232a3d4b80ad32743c6a12af24','inserted','2026-11-25 01:25:18.198699');
INSERT INTO "mirror_changes" VALUES(28,'947bd608e971410eab6a77ba15883c71','payroll-connections','66c7e4dae63245088929f3b7adb945e4','deleted','2026-11-25 01:25:18.213549');
CREATE TABLE mirror_runs (
	run_id CHAR(32) NOT NULL, 
	collection TEXT NOT NULL, 
	started_at DATETIME NOT NULL, 
	finished_at DATETIME, 
	complete BOOLEAN NOT NULL, 
	items BIGINT NOT NULL, 
	inserted BIGINT NOT NULL, 
	updated BIGINT NOT NULL, 
	deleted BIGINT NOT NULL, 
	PRIMARY KEY (run_id)
);
INSERT INTO "mirror_runs" VALUES('c90f9088147942a0a0aed9ad94c7d60c','payroll-connections','2026-11-25 01:25:18.042544','2026-11-25 01:25:18.064755',1,12,12,0,0);
INSERT INTO "mirror_runs" VALUES('b04258e22fbf4ca5adc985bb8b2e6e71','employer-identifiers','2026-11-25 01:25:18.079277','2026-11-25 01:25:18.097519',1,3,3,0,0);
INSERT INTO "mirror_runs" VALUES('65c08a5871744e1a896929b6bea5cfe4','webhooks','2026-11-25 01:25:18.111926','2026-11-25 01:25:18.130032',1,3,3,0,0);
INSERT INTO "mirror_runs" VALUES('e04871fdc1d147df919376c2c46cb203','update-groups','2026-11-25 01:25:18.144827','2026-11-25 01:25:18.175373',1,6,6,0,0);
INSERT INTO "mirror_runs" VALUES('947bd608e971410eab6a77ba15883c71','payroll-connections','2026-11-25 01:25:18.190482','2026-11-25 01:25:18.218108',1,12,1,2,1);
CREATE TABLE mirror_schema (
	version INTEGER NOT NULL, 
	installed_at DATETIME NOT NULL, 
	PRIMARY KEY (version)
);
INSERT INTO "mirror_schema" VALUES(1,'2026-11-25 01:25:18.039679');
CREATE TABLE payroll_connections (
	id CHAR(32) NOT NULL, 
	employer_identifier_id CHAR(32) NOT NULL, 
	payroll_platform_id CHAR(32) NOT NULL, 
	created_at DATETIME NOT NULL, 
	status TEXT NOT NULL, 
	product TEXT NOT NULL, 
	mirror_first_seen_at DATETIME NOT NULL, 
	mirror_last_seen_at DATETIME NOT NULL, 
	mirror_deleted_at DATETIME, 
	PRIMARY KEY (id)
);
INSERT INTO "payroll_connections" VALUES('f0ce6e742daf408c9c58baaab9204638','042d97b7a1a7414d85a345077b258a7a','566636eb5ddb42089bb69bdc69e59927','2024-01-01 00:00:00.000000','error','loans','2026-11-25 01:25:18.055594','2026-11-25 01:25:18.055594',NULL);
INSERT INTO "payroll_connections" VALUES('e13bf6feb0614c58b579d114759cc423','5b8db74673394d178ba8880cf4d84ea0','4e3837c1473542ac96d0f441ca607fca','2024-01-01 00:00:37.000000','disconnected','loans','2026-11-25 01:25:18.055594','2026-11-25 01:25:18.055594',NULL);
INSERT INTO "payroll_connections" VALUES('8d472809fc4044759bc7c012812bee46','318f048aef724eeab4f5157e1af21cc6','efc9d5188f684c75bef0c1dcafe4fa3d','2024-01-01 00:01:14.000000','pending','loans','2026-11-25 01:25:18.055594','2026-11-25 01:25:18.055594',NULL);
INSERT INTO "payroll_connections" VALUES('f8a5dd4d6f924c4da8f594a9f76cf0dd','042d97b7a1a7414d85a345077b258a7a','2f67297982dd4baba37fd856c908042d','2024-01-01 00:01:51.000000','active','loans','2026-11-25 01:25:18.055594','2026-11-25 01:25:18.055594',NULL);
INSERT INTO "payroll_connections" VALUES('c46f2c6979b44a209591f7994340ac95','5b8db74673394d178ba8880cf4d84ea0','f05e6e3d273448fbba12b889f14978c0','2024-01-01 00:02:28.000000','pending','loans','2026-11-25 01:25:18.055594','2026-11-25 01:25:18.198699',NULL);
INSERT INTO "payroll_connections" VALUES('f1b9ae160bf1418c9b167b93a1fb5901','318f048aef724eeab4f5157e1af21cc6','fa4305d9db254efabfc69b66740ceba9','2024-01-01 00:03:05.000000','disconnected','loans','2026-11-25 01:25:18.055594','2026-11-25 01:25:18.055594',NULL);
INSERT INTO "payroll_connections" VALUES('236d7af88f534d8e9801695c44a1fd22','042d97b7a1a7414d85a345077b258a7a','ac83e071249f417c96364e703afa2f7b','2024-01-01 00:03:42.000000','pending','loans','2026-11-25 01:25:18.055594','2026-11-25 01:25:18.055594',NULL);
INSERT INTO "payroll_connections" VALUES('e1bc8242aa7a4c0aafc0613c384093a0','5b8db74673394d178ba8880cf4d84ea0','566636eb5ddb42089bb69bdc69e59927','2024-01-01 00:04:19.000000','error','loans','2026-11-25 01:25:18.055594','2026-11-25 01:25:18.198699',NULL);
INSERT INTO "payroll_connections" VALUES('66c7e4dae63245088929f3b7adb945e4','318f048aef724eeab4f5157e1af21cc6','4e3837c1473542ac96d0f441ca607fca','2024-01-01 00:04:56.000000','error','loans','2026-11-25 01:25:18.055594','2026-11-25 01:25:18.055594','2026-11-25 01:25:18.213549');
INSERT INTO "payroll_connections" VALUES('ce06ebb58f114017a09fb8aeb99e06df','042d97b7a1a7414d85a345077b258a7a','efc9d5188f684c75bef0c1dcafe4fa3d','2024-01-01 00:05:33.000000','disconnected','loans','2026-11-25 01:25:18.055594','2026-11-25 01:25:18.055594',NULL);
INSERT INTO "payroll_connections" VALUES('2ff6f13208d2484196e04f5bb1b410c4','5b8db74673394d178ba8880cf4d84ea0','2f67297982dd4baba37fd856c908042d','2024-01-01 00:06:10.000000','pending','loans','2026-11-25 01:25:18.055594','2026-11-25 01:25:18.055594',NULL);
INSERT INTO "payroll_connections" VALUES('8e0c01ca92314d39bddebfdcc1f75659','318f048aef724eeab4f5157e1af21cc6','f05e6e3d273448fbba12b889f14978c0','2024-01-01 00:06:47.000000','active','loans','2026-11-25 01:25:18.055594','2026-11-25 01:25:18.055594',NULL);
INSERT INTO "payroll_connections" VALUES('a68139232a3d4b80ad32743c6a12af24','042d97b7a1a7414d85a345077b258a7a','fa4305d9db254efabfc69b66740ceba9','2024-01-01 00:07:24.000000','error','loans','2026-11-25 01:25:18.198699','2026-11-25 01:25:18.198699',NULL);
CREATE TABLE update_groups (
	update_group_id CHAR(32) NOT NULL, 
	employer_identifier_id CHAR(32) NOT NULL, 
	upload_date DATETIME NOT NULL, 
	error_count BIGINT NOT NULL, 
	mirror_first_seen_at DATETIME NOT NULL, 
	mirror_last_seen_at DATETIME NOT NULL, 
	mirror_deleted_at DATETIME, 
	PRIMARY KEY (update_group_id)
);
INSERT INTO "update_groups" VALUES('498142639a544303bd369f54bef017c7','042d97b7a1a7414d85a345077b258a7a','2024-01-01 00:00:00.000000',0,'2026-11-25 01:25:18.155688','2026-11-25 01:25:18.155688',NULL);
INSERT INTO "update_groups" VALUES('c73907fea4d24641b62861a6811850d8','042d97b7a1a7414d85a345077b258a7a','2024-01-02 00:00:00.000000',9,'2026-11-25 01:25:18.155688','2026-11-25 01:25:18.155688',NULL);
INSERT INTO "update_groups" VALUES('7319910e12de4447bd003697b7b882c2','5b8db74673394d178ba8880cf4d84ea0','2024-01-01 00:10:00.000000',0,'2026-11-25 01:25:18.161734','2026-11-25 01:25:18.161734',NULL);
INSERT INTO "update_groups" VALUES('50290ffa7a6e424580775471d5d52666','5b8db74673394d178ba8880cf4d84ea0','2024-01-02 00:10:00.000000',0,'2026-11-25 01:25:18.161734','2026-11-25 01:25:18.161734',NULL);
INSERT INTO "update_groups" VALUES('fddc9b2397844efb9c78d6fb6a97524b','318f048aef724eeab4f5157e1af21cc6','2024-01-01 00:20:00.000000',0,'2026-11-25 01:25:18.167344','2026-11-25 01:25:18.167344',NULL);
INSERT INTO "update_groups" VALUES('25dcf1e736744a3498668f5bd4795735','318f048aef724eeab4f5157e1af21cc6','2024-01-02 00:20:00.000000',0,'2026-11-25 01:25:18.167344','2026-11-25 01:25:18.167344',NULL);
CREATE TABLE webhook_subscriptions (
	webhook_subscription_id CHAR(32) NOT NULL, 
	webhook_event_types JSON NOT NULL, 
	path TEXT NOT NULL, 
	created_at DATETIME NOT NULL, 
	active BOOLEAN NOT NULL, 
	mirror_first_seen_at DATETIME NOT NULL, 
	mirror_last_seen_at DATETIME NOT NULL, 
	mirror_deleted_at DATETIME, 
	PRIMARY KEY (webhook_subscription_id)
);
INSERT INTO "webhook_subscriptions" VALUES('c393fd0e1cc64be5b83646bf0324aac3','["EMPLOYEE_CENSUS_HIRED"]','https://hooks.example.com/payroll/0','2024-01-01 00:00:00.000000',1,'2026-11-25 01:25:18.121679','2026-11-25 01:25:18.121679',NULL);
INSERT INTO "webhook_subscriptions" VALUES('0b13a023af114ab1a40f16a76490fd4a','["EMPLOYEE_CENSUS_TERMINATED"]','https://hooks.example.com/payroll/1','2024-01-02 00:00:00.000000',1,'2026-11-25 01:25:18.121679','2026-11-25 01:25:18.121679',NULL);
INSERT INTO "webhook_subscriptions" VALUES('8903a9c81cc949f6b344bafb23813fa9','["EMPLOYEE_CENSUS_UPDATED"]','https://hooks.example.com/payroll/2','2024-01-03 00:00:00.000000',0,'2026-11-25 01:25:18.121679','2026-11-25 01:25:18.121679',NULL);
CREATE INDEX update_groups_employer_identifier_id ON update_groups (employer_identifier_id);
CREATE INDEX mirror_changes_at ON mirror_changes (collection, at);
COMMIT;
